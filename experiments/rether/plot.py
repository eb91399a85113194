"""RETHER figures on the simulator: one PNG per results file.

usage: plot.py results/<figure>.json OUT_DIR  (writes OUT_DIR/results/<figure>.png)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

path = sys.argv[1]
res = json.load(open(path))
name = res["experiment"].replace("rether-", "")
out = os.path.join(os.path.dirname(os.path.abspath(path)), f"{name}.png")
quick = " (quick)" if res.get("quick") else ""


def fig4(ax):
    for v in res["variants"]:
        pts = [p for p in v["points"] if p["switch_ms_mean"] is not None]
        ax.errorbar([p["stations"] for p in pts], [p["switch_ms_mean"] for p in pts],
                    yerr=[[p["switch_ms_mean"] - p["switch_ms_min"] for p in pts],
                          [p["switch_ms_max"] - p["switch_ms_mean"] for p in pts]],
                    marker="o", capsize=3, label=f"rtlan sim: {v['variant']} (mean, min–max)")
    lo, hi = res["paper"]["switch_ms_range"]
    ax.fill_between([2, 5], [lo, lo], [hi, hi], color="grey", alpha=0.3, label="paper Fig. 4 range (2–5 PCs)")
    ax.set_xlabel("stations")
    ax.set_ylabel("switch time CSMA → RETHER (ms)")


def fig5(ax):
    for c in res["curves"]:
        pts = [p for p in c["points"] if p["admitted"] == c["sessions"] and p["access_ms"] is not None]
        ax.plot([p["total_kb"] for p in pts], [p["access_ms"] for p in pts], marker="o",
                label=f"{c['sessions']} session(s)")
    ax.axhline(10, color="k", ls=":", lw=1, label="10 ms tolerable access delay")
    ax.scatter([28, 26], [10, 10], marker="x", s=80, color="r", label="paper: 1 session 28 KB, 4 sessions 26 KB")
    ax.set_xlabel("total reservation (KB per 33.3 ms frame)")
    ax.set_ylabel("NRT access delay (ms, mean gap between NRT visits)")


def fig6(ax):
    for c in res["curves"]:
        pts = [p for p in c["points"] if p["admitted"] == p["sessions"] and p["access_ms"] is not None]
        ax.plot([p["sessions"] for p in pts], [p["access_ms"] for p in pts], marker="o",
                label=f"{c['total_kb']} KB per frame ({c['reserved_percent']:.0f} %)")
    ax.set_xlabel("number of sessions")
    ax.set_ylabel("NRT access delay (ms)")


def fig8(ax):
    pts = [p for p in res["points"] if p["access_ms"] is not None]
    ax.plot([p["stations"] for p in pts], [p["access_ms"] for p in pts], marker="o", label="rtlan sim: mean")
    ax.plot([p["stations"] for p in pts], [p["access_max_ms"] for p in pts], marker=".", ls="--", label="rtlan sim: largest gap")
    ax.scatter([20], [8], marker="x", s=80, color="r", label="paper: 8 ms at 20 stations")
    ax.set_xlabel("stations")
    ax.set_ylabel("NRT access delay (ms)")


def fig9(ax):
    for c in res["curves"]:
        pts = [p for p in c["points"] if p["access_ms"] is not None and p["admitted"] == p["streams"]]
        ax.plot([p["reserved_percent"] for p in pts], [p["access_ms"] for p in pts], marker="o",
                label=f"{c['hardware']} (admits {max(p['admitted'] for p in c['points'])})")
    ax.set_yscale("log")
    ax.set_xlabel("bandwidth reserved by MPEG-I streams (% of the link)")
    ax.set_ylabel("NRT access delay (ms)")


def mpeg40(ax):
    loads = [r["nrt_load"] for r in res["loads"]]
    x = range(len(loads))
    ax.bar([i - 0.2 for i in x], [r["rether"]["deadline_misses"] / max(r["rether"]["units"], 1) * 100 for r in res["loads"]],
           0.4, label="RETHER (admitted sessions)")
    ax.bar([i + 0.2 for i in x], [r["csma"]["miss_percent"] for r in res["loads"]], 0.4, label="CSMA/CD, same streams")
    for i, r in enumerate(res["loads"]):
        ax.text(i - 0.2, 1, f"{r['rether']['deadline_misses']}", ha="center")
        ax.text(i + 0.2, r["csma"]["miss_percent"] + 1, f"{r['csma']['miss_percent']:.1f} %", ha="center")
    ax.set_xticks(list(x))
    ax.set_xticklabels(loads)
    ax.set_ylim(0, 105)
    ax.set_ylabel(f"pictures later than {res['deadline_ms']:.0f} ms (%)")
    ax.set_xlabel(f"NRT load ({res['loads'][0]['rether']['admitted']} of {res['loads'][0]['rether']['requested']} streams admitted)")


def table1(ax):
    xs, ys_c, ys_r, ys_p = [], [], [], []
    paper = {row["streams"]: row["late_percent"] for row in res["paper"]}
    for row in res["rows"]:
        n = row["streams"]
        for i in range(n):
            xs.append(n + (i - (n - 1) / 2) * 0.12)
            ys_c.append(row["csma"]["late_percent"][i])
            ys_r.append(row["rether"]["late_percent"][i])
            ys_p.append(paper[n][i])
    ys_c1 = []
    for row in res["rows"]:
        ys_c1 += row["csma"]["late_one_frame_percent"]
    ax.scatter(xs, ys_p, marker="x", color="grey", s=60, label="paper (CSMA/CD, 5 PCs), > 2 ms late")
    ax.scatter(xs, ys_c, marker="o", label="rtlan sim: CSMA/CD, > 2 ms late")
    ax.scatter(xs, ys_c1, marker="v", label="rtlan sim: CSMA/CD, > one frame (33 ms) late")
    ax.scatter(xs, [y if y is not None else -3 for y in ys_r], marker="s", label="rtlan sim: RETHER, > 2 ms late (refused at -3)")
    ax.set_xlabel("concurrent streams (one point per stream)")
    ax.set_ylabel("late frames (%)")


fig, ax = plt.subplots(figsize=(8, 5))
{"fig4": fig4, "fig5": fig5, "fig6": fig6, "fig8": fig8, "fig9": fig9, "mpeg40": mpeg40, "table1": table1}[name](ax)
ax.set_title(res["figure"] + quick, fontsize=9)
ax.legend(fontsize=7)
ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(out)
