"""EtheReal Fig. 5: 80 ms sliding-window rates of TCP and the real-time flow."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
cases = res["cases"]
fig, axes = plt.subplots(len(cases), 1, figsize=(9, 2.6 * len(cases)), sharex=True)
if len(cases) == 1:
    axes = [axes]
for ax, c in zip(axes, cases):
    s = c["series"]
    label = "reserved" if c["kind"] == "rtlan" else "plain UDP"
    ax.plot(s["t_s"], s["rt_mbps"], label=f"real-time ({label} {c['rt_mbit']} Mbit/s)")
    ax.plot(s["t_s"], s["tcp_mbps"], label="TCP (iperf3)")
    ax.axvspan(c["rt_start_s"], c["rt_end_s"], color="grey", alpha=0.1)
    ax.set_ylabel("Mbit/s")
    ax.set_ylim(0, 105)
    ax.set_title(f"{c['kind']}: {c['rt_mbit']} Mbit/s, {res['window_ms']} ms window", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
axes[-1].set_xlabel("time since TCP start (s)")
fig.tight_layout()
fig.savefig(f"{out}/fig5.png", dpi=110)
