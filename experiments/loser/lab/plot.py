#!/usr/bin/python3
"""Figure 7 of seed 004 (delay bound, estimate, observed maximum and CPU load of node D against
the shaping interval Ts) for both switch kinds, plus the Table 2 buffer probe.
Usage: plot.py results.json OUT_DIR"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
colors = {"linux-bridge": "tab:blue", "rtlan": "tab:red"}
probe = any(k.get("buffer_probe") for k in res["kinds"])
fig, axes = plt.subplots(1, 2 if probe else 1, figsize=(14 if probe else 7.5, 7))
ax = axes[0] if probe else axes
cpu_ax = ax.twinx()
paper = res["paper"]
ax.plot(paper["ts_us"], paper["t_max_us"], color="0.6", lw=1, marker="s", ms=4,
        label="paper: delay bound t_max")
ax.plot(paper["ts_us"], paper["t_obs_us"], color="0.6", lw=1, ls=":", marker="o", ms=4,
        label="paper: observed max")
cpu_ax.plot(paper["ts_us"], paper["cpu_percent"]["d"], color="0.6", lw=1, ls="--",
            marker="^", ms=4, label="paper: CPU load of D")
for k in res["kinds"]:
    c = colors.get(k["kind"], "k")
    runs = sorted(k["runs"], key=lambda r: r["ts_us"])
    ts = [r["ts_us"] for r in runs]
    name = k["kind"]
    ax.plot(ts, [r["bounds"]["max"]["t_max_us"] for r in runs], color=c, marker="s",
            label=f"{name}: bound t_max (max host term)")
    ax.plot(ts, [r["bounds"]["max"]["t_est_us"] for r in runs], color=c, ls="-.", lw=1,
            label=f"{name}: estimate t_est (eq. 7)")
    mgr = [(r["ts_us"], (r.get("manager") or {}).get("t_max_us")) for r in runs]
    mgr = [(t, m) for t, m in mgr if m]
    if mgr:
        ax.plot([t for t, _ in mgr], [m for _, m in mgr], color=c, ls="none", marker="x", ms=9,
                label=f"{name}: rtlan bwm's bound (central admission)")
    ax.plot(ts, [r["probe_delay"]["max_us"] for r in runs], color=c, ls=":", marker="o",
            label=f"{name}: observed max")
    ax.plot(ts, [r["probe_delay"]["p999_us"] for r in runs], color=c, ls="none",
            marker="o", mfc="none", label=f"{name}: observed p99.9")
    cpu = [r["streams"]["d"]["cpu_percent"] or 0 for r in runs]
    cpu_ax.plot(ts, cpu, color=c, ls="--", marker="^", label=f"{name}: CPU load of d")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("traffic shaping interval Ts (µs)")
ax.set_ylabel("delay a→b (µs)")
cpu_ax.set_ylabel("CPU load of sender d (%)")
cpu_ax.set_ylim(0, max(30, cpu_ax.get_ylim()[1]))
h1, l1 = ax.get_legend_handles_labels()
h2, l2 = cpu_ax.get_legend_handles_labels()
ax.legend(h1 + h2, l1 + l2, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3)
title = "Löser/Härtig Fig. 7 in the lab: delay/CPU trade-off"
if res.get("quick"):
    title += " (--quick)"
ax.set_title(title, fontsize=10)
ax.grid(True, which="both", alpha=0.3)

if probe:
    bx = axes[1]
    for k in res["kinds"]:
        bp = k.get("buffer_probe")
        if not bp:
            continue
        c = colors.get(k["kind"], "k")
        steps = bp["steps"]
        bx.plot([s["burst_wire_bytes"] / 1000 for s in steps], [s["lost"] for s in steps],
                color=c, marker="o", label=f"{k['kind']}: lost datagrams")
        bx.axvline(k["buffer_bytes"] / 1000, color=c, ls="--", lw=1,
                   label=f"{k['kind']}: configured queue {k['buffer_bytes'] / 1000:.1f} KB")
        over = [s["burst_wire_bytes"] for s in steps
                if s.get("backlog_bound_bytes", 0) > k["buffer_bytes"]]
        fits = [s["burst_wire_bytes"] for s in steps
                if 0 < s.get("backlog_bound_bytes", 0) <= k["buffer_bytes"]]
        if over and fits:
            edge = (max(fits) + min(over)) / 2000
            bx.axvline(edge, color="k", ls="-", lw=0.8, alpha=0.5,
                       label="eq. (4) for two (r, b) senders reaches the queue" if k is res["kinds"][0] else None)
    bx.axvline(127.4, color="0.6", ls=":", label="paper: Level-One 127.4 KB")
    bx.axvline(20.5, color="0.6", ls="-.", label="paper: 3Com 20.5 KB")
    bx.set_xlabel("burst b = r·Ts + M per sender (KB, wire bytes)")
    bx.set_ylabel("datagrams lost (c and d)")
    bx.set_yscale("symlog", linthresh=1)
    bx.set_ylim(bottom=0)
    bx.set_title("Table 2: buffer probe (c, d on-off at 49 Mbit/s to b)", fontsize=10)
    bx.legend(fontsize=7)
    bx.grid(True, alpha=0.3)
fig.tight_layout()
fig.savefig(f"{out}/loser.png", dpi=120)
