"""Multihop delay bounds: observed maximum delay against the granted bound, per connection.

usage: plot.py results.json OUT_DIR  (writes OUT_DIR/multihop.png)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
markers = {"chain3": "o", "chain5": "s", "leafspine": ".", "reference": "x"}
for ax, sched in zip(axes, ["wheel", "cyclic"]):
    top = 0.0
    for sc in [s for s in res["scenarios"] if s["scheduler"] == sched]:
        fields = sc["connections"]["fields"]
        rows = [dict(zip(fields, r)) for r in sc["connections"]["rows"]]
        pts = [(r["bound_us"] / 1000, r["max_us"] / 1000) for r in rows if r["bound_us"] and r["max_us"] is not None]
        if not pts:
            continue
        name = sc["file"].split("/")[-1].replace(".toml", "")
        kind = "reference" if sc["file"].startswith("..") else name.split("-")[0]
        label = f"{name}{' (repo scenario)' if kind == 'reference' else ''}: max tightness {sc['tightness']['max']:.2f}"
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12 if kind == "leafspine" else 40,
                   marker=markers.get(kind, "o"), alpha=0.5 if kind == "leafspine" else 0.9, label=label)
        top = max(top, max(p[0] for p in pts))
    ax.plot([0, top * 1.05], [0, top * 1.05], "k-", lw=1, label="y = x (observed = bound)")
    ax.plot([0, top * 1.05], [0, 0.7 * top * 1.05], "k:", lw=1, label="y = 0.7 x")
    ax.set_xlabel("granted end-to-end bound (ms)")
    ax.set_ylabel("observed maximum delay (ms)")
    ax.set_title(f"{sched} scheduler")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
fig.suptitle("rtlan multihop (simulator): observed max delay vs bound per reserved connection" + (" (quick)" if res["quick"] else ""))
fig.tight_layout()
fig.savefig(f"{out}/multihop.png", dpi=110)
