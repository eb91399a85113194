"""Plot for `rtlan demo`: delivered rate per flow at d, rtlan beside the Linux bridge.

Usage: /usr/bin/python3 plot.py RESULTS.json OUT.png  (RESULTS is `rtlan demo --json` output)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    results_path, out_path = sys.argv[1], sys.argv[2]
    with open(results_path) as f:
        runs = json.load(f)["runs"]
    names = [fl["name"] for fl in runs[0]["flows"]]
    width = 0.8 / len(runs)
    colors = {"rtlan": "tab:blue", "linux-bridge": "tab:gray"}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, run in enumerate(runs):
        by_name = {fl["name"]: fl for fl in run["flows"]}
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(names))]
        ys = [by_name[n]["delivered_bps"] / 1e6 if n in by_name else 0 for n in names]
        bars = ax.bar(xs, ys, width, label=run["switch"],
                      color=colors.get(run["switch"], None))
        for bar, n in zip(bars, names):
            loss = by_name.get(n, {}).get("loss_pct")
            label = "TCP" if loss is None else f"loss {loss:.1f}%"
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    for run in runs:
        for j, fl in enumerate(run["flows"]):
            if fl["reserved_bps"] is not None:
                ax.hlines(fl["reserved_bps"] / 1e6, j - 0.45, j + 0.45, colors="tab:red",
                          linestyles="dashed", label="reserved (rtlan)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylabel("delivered at d, Mbit/s (wire)")
    ax.set_title("50 Mbit/s a→d while b, c flood d (100 Mbit/s links)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)


if __name__ == "__main__":
    main()
