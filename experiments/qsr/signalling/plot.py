"""Plot QSR §6.2's signalling under overload: the reserved stream's loss and the RSVP state
timeouts with RSVP on the protected control queue and in the data queue, lab and simulator.
usage: plot.py results-<backend>.json OUT_DIR (reads whichever of results-lab.json and
results-sim.json sit beside the given file)."""
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
    labels = ["protected\ncontrol queue" if c["protected"] else "RSVP in the\ndata queue"
              for c in cases]
    stream = [c["stream"] if res["backend"] == "lab" else c["early"] for c in cases]
    pkt = [s["loss_pct"] for s in stream]
    frm = [s["frame_loss_pct"] for s in stream]
    x = range(len(cases))
    b1 = ax.bar([i - 0.2 for i in x], pkt, 0.4, label="packets lost")
    b2 = ax.bar([i + 0.2 for i in x], frm, 0.4, label="frames lost")
    for bars in (b1, b2):
        for b in bars:
            ax.annotate(f"{b.get_height():.1f} %", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=8)
    for i, c in enumerate(cases):
        ax.annotate(f"{c['state_timeouts']} state timeouts", (i, 95), ha="center", fontsize=8,
                    color="darkred")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 115)
    ax.set_ylabel("reserved stream: % of packets / frames lost")
    if res["backend"] == "lab":
        where = "lab: 3 rtlan routers, every router link flooded 3×"
    else:
        where = f"sim: ring of {res['routers']} routers, every link flooded 2× both ways"
    ax.set_title(where + (" (quick)" if res["quick"] else ""), fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
fig.suptitle(f"QSR §6.2: RSVP refreshed every {runs[0]['refresh']} under floods, "
             "the reservation made before the flood")
fig.tight_layout()
fig.savefig(f"{out}/signalling.png", dpi=120)
