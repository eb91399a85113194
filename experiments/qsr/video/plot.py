"""Plot QSR §6.2's video under blast: packet and frame loss without and with the reservation,
lab and simulator side by side. usage: plot.py results-<backend>.json OUT_DIR (reads whichever
of results-lab.json and results-sim.json sit beside the given file)."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(sys.argv[1]))
out = sys.argv[2]
runs = []
for backend in ("lab", "sim"):
    path = os.path.join(here, f"results-{backend}.json")
    if os.path.exists(path):
        runs.append(json.load(open(path)))
fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.5), squeeze=False)
for ax, res in zip(axes[0], runs):
    cases = res["cases"]
    labels = ["default IP" if not c["reserved"] else "RSVP reservation" for c in cases]
    pkt = [c["video"]["loss_pct"] for c in cases]
    frm = [c["video"]["frame_loss_pct"] for c in cases]
    x = range(len(cases))
    b1 = ax.bar([i - 0.2 for i in x], pkt, 0.4, label="packets lost")
    b2 = ax.bar([i + 0.2 for i in x], frm, 0.4, label="video frames lost")
    for bars in (b1, b2):
        for b in bars:
            ax.annotate(f"{b.get_height():.1f} %", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 110)
    ax.set_ylabel("% of the video's packets / frames")
    if res["backend"] == "lab":
        where = "lab: 3 rtlan routers, 2 hosts blasting 100 Mbit/s each"
    else:
        where = (f"sim: ring of {res['routers']} routers, {len(res['videos'])} videos, "
                 f"{len(res['congested'])} congested routers")
    ax.set_title(where + (" (quick)" if res["quick"] else ""), fontsize=9)
    ax.legend(fontsize=8)
fig.suptitle(f"QSR §6.2: {runs[0]['video']['rate']} video, {runs[0]['video']['packets_per_frame']} "
             "packets per frame, under a blast (paper: severe loss → zero with the pipe)")
fig.tight_layout()
fig.savefig(f"{out}/video.png", dpi=120)
