"""RETHER Fig. 7: NRT access delay against the number of MPEG-I sessions, lab beside simulator.

Usage: plot.py RESULTS OUT_DIR
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results = json.load(open(sys.argv[1]))
out = sys.argv[2]
pts = results["points"]
n = [p["sessions"] for p in pts]
lab = [p["lab"]["access_ms"] for p in pts]
sim = [p["sim_access_ms"] for p in pts]
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(n, lab, "o-", label="lab (rtlan rether agents)")
ax.plot(n, sim, "s--", label="simulator (same Station code)")
ax.axvline(n[0], color="grey", lw=0.5)
ax.annotate("calibration point", (n[0], lab[0]), textcoords="offset points", xytext=(5, 10))
ax.set_xlabel("real-time sessions (1.5 Mbit/s MPEG-I each)")
ax.set_ylabel("mean time between NRT visits, ms")
ax.set_title("RETHER Fig. 7: 5 stations, 10 Mbit/s, TRT %.1f ms" % results["trt_ms"])
ax.set_xticks(n)
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(os.path.join(out, "fig7.png"), dpi=120)
