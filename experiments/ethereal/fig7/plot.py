"""Plot EtheReal Fig. 7 reproduction: usage: plot.py results.json OUT_DIR"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
fig, ax = plt.subplots(figsize=(7, 4.5))
for v in res["variants"]:
    pts = v["points"]
    x = [p["rt_mbit"] for p in pts]
    if v["variant"] == "direct":
        ax.axhline(pts[0]["rtt_us"]["p50"], color="grey", ls=":", label="no switch (median)")
        continue
    med = [p["rtt_us"]["p50"] for p in pts]
    p99 = [p["rtt_us"]["p99"] for p in pts]
    line, = ax.plot(x, med, "o-", label=f"{v['variant']} median")
    ax.plot(x, p99, "s--", color=line.get_color(), label=f"{v['variant']} p99")
ax.set_yscale("log")
ax.set_xlabel("real-time load through the output port (Mbit/s)")
ax.set_ylabel("NRT ping round-trip time a ↔ b (µs)")
ax.set_title("EtheReal Fig. 7: NRT latency vs real-time load" + (" (quick)" if res["quick"] else ""))
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{out}/fig7.png", dpi=120)
