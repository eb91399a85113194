"""EtheReal Fig. 6: inter-arrival times at the switch input and at the destination."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
fig, axes = plt.subplots(2, 2, figsize=(11, 6))
for row, c in enumerate(res["cases"]):
    title = "with TCP from the sender" if c["with_tcp"] else "no interfering traffic"
    ax = axes[row][0]
    for where in ["input", "destination"]:
        ax.plot(np.array(c[where]["first_us"]) / 1000.0, lw=0.7, label=f"switch {where}" if where == "input" else where)
    ax.set_ylabel("inter-arrival (ms)")
    ax.set_xlabel("packet")
    ax.set_title(f"{res['rt_mbit']} Mbit/s reserved, {title}", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[row][1]
    for where in ["input", "destination"]:
        v = np.sort(np.array(c[where]["all_us"])) / 1000.0
        if len(v):
            ax.plot(v, np.arange(1, len(v) + 1) / len(v), label=f"switch {where}" if where == "input" else where)
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("inter-arrival (ms)")
    ax.set_ylabel("CDF")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(f"{out}/fig6.png", dpi=110)
