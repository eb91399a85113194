"""Plot the §4.3 capacity experiment: usage: plot.py results.json OUT_DIR"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
fig, ax = plt.subplots(figsize=(7, 4.5))
costs = []
for p in res["points"]:
    if p["cpu_cost_per_connection"] not in costs:
        costs.append(p["cpu_cost_per_connection"])
for cost in costs:
    pts = [p for p in res["points"] if p["cpu_cost_per_connection"] == cost]
    b = [p["budget_percent"] for p in pts]
    lo = min(p["cost_per_connection_ns"] for p in pts)
    hi = max(p["cost_per_connection_ns"] for p in pts)
    ns = f"{lo:.0f} ns" if lo == hi else f"{lo:.0f}–{hi:.0f} ns"
    line, = ax.plot(b, [p["admitted"] for p in pts], "o-", label=f"admitted, cost {cost} ({ns})")
    ax.plot(b, [p["predicted"] for p in pts], "s:", color=line.get_color(), label=f"predicted, cost {cost}")
ax.axhline(res["paper_connections"], color="red", ls=":", label="paper: 1669 (CPU limit)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("cpu_budget_percent")
ax.set_ylabel("real-time connections through one switch")
ax.set_title("EtheReal §4.3: admitted connections vs CPU budget" + (" (quick)" if res["quick"] else ""))
ax.legend()
fig.tight_layout()
fig.savefig(f"{out}/capacity.png", dpi=120)
