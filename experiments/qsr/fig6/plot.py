"""Plot QSR §6.1 Fig. 6 (forwarding rate vs packet size and look-up depth):
usage: plot.py results.json OUT_DIR"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
pts = res["points"]
names = {"rtlan_router": "rtlan router", "kernel_router": "Linux kernel"}
styles = {"rtlan_router": "C0", "kernel_router": "C1"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
size_depths = sorted({p["depth"] for p in pts if p["frame_len"] != res["depth_frame_len"]} |
                     {min(p["depth"] for p in pts), max(p["depth"] for p in pts)})
for v in names:
    for d, ls in zip(size_depths, ["-", "--", ":", "-."]):
        sel = sorted((p for p in pts if p["variant"] == v and p["depth"] == d),
                     key=lambda p: p["frame_len"])
        if len(sel) < 2:
            continue
        x = [p["frame_len"] for p in sel]
        ax1.plot(x, [p["forwarded_kpps"] for p in sel], "o" + ls, color=styles[v],
                 label=f"{names[v]}, depth {d}")
off = sorted((p for p in pts if p["variant"] == "kernel_router" and p["depth"] == size_depths[0]),
             key=lambda p: p["frame_len"])
ax1.plot([p["frame_len"] for p in off], [p["offered_kpps"] for p in off], ":", color="grey",
         label="offered by trafgen (kernel lab)")
ax1.axhline(res["paper_kpps"]["depth_1"], color="red", ls="-", lw=0.8,
            label="paper: 126 Kpps, depth 1 (small packets)")
ax1.axhline(res["paper_kpps"]["depth_32"], color="red", ls="--", lw=0.8,
            label="paper: 96 Kpps, depth 32")
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.set_xlabel("Ethernet frame length, bytes (FCS included)")
ax1.set_ylabel("forwarded, kpps")
ax1.set_title("rate vs packet size")
ax1.legend(fontsize=7)
for v in names:
    sel = sorted((p for p in pts if p["variant"] == v and p["frame_len"] == res["depth_frame_len"]),
                 key=lambda p: p["depth"])
    ax2.plot([p["depth"] for p in sel], [p["forwarded_kpps"] for p in sel], "o-",
             color=styles[v], label=names[v])
ax2.plot([1, 32], [126, 96], "s--", color="red", label="paper (trunk FE, DP-trie)")
ax2.set_xlabel("look-up depth: routes containing the destination")
ax2.set_ylabel(f"forwarded, kpps ({res['depth_frame_len']}-byte frames)")
ax2.set_ylim(bottom=0)
ax2.set_title("rate vs look-up depth")
ax2.legend(fontsize=8)
fig.suptitle("QSR §6.1, Fig. 6: IP forwarding, rtlan router vs Linux kernel (same run)"
             + (" (quick)" if res["quick"] else ""))
fig.tight_layout()
fig.savefig(f"{out}/fig6.png", dpi=120)
