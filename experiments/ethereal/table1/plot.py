"""EtheReal Table 1: measured shaper tick T_m against competing busy processes."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
ticks = sorted({r["tick_ms"] for r in res["rows"]})
fig, axes = plt.subplots(1, len(ticks), figsize=(5 * len(ticks), 3.6))
if len(ticks) == 1:
    axes = [axes]
for ax, t in zip(axes, ticks):
    rows = [r for r in res["rows"] if r["tick_ms"] == t]
    b = [r["busy"] for r in rows]
    m = [r["tick"]["measured"] for r in rows]
    ax.errorbar(b, [x["mean_ms"] for x in m], yerr=[x["stddev_ms"] for x in m], fmt="o-", label="mean ± sd")
    ax.plot(b, [x["p99_ms"] for x in m], "s--", label="p99")
    ax.plot(b, [x["max_ms"] for x in m], "^:", label="max")
    if t == 10:
        p = res["paper_10ms"]
        ax.plot([x["busy"] for x in p], [x["max_ms"] for x in p], "kx", label="paper max")
        ax.plot([x["busy"] for x in p], [x["mean_ms"] for x in p], "k+", label="paper mean")
    ax.axhline(t, color="grey", lw=0.5)
    ax.set_xlabel("competing busy processes")
    ax.set_ylabel("measured tick T_m (ms)")
    ax.set_title(f"nominal tick {t} ms", fontsize=9)
    ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(f"{out}/table1.png", dpi=110)
