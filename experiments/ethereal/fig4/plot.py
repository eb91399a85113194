"""Plot EtheReal Fig. 4 reproduction: usage: plot.py results.json OUT_DIR"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res = json.load(open(sys.argv[1]))
out = sys.argv[2]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
for v in res["variants"]:
    pts = [p for p in v["points"] if "interferers" in p]
    n = [p["interferers"] for p in pts]
    ax1.plot(n, [p["test_wire_bps"] / 1e6 for p in pts], "o-", label=v["variant"])
    ax2.plot(n, [p["deviation_pct"] for p in pts], "o-", label=v["variant"])
ax1.axhline(res["test_rate_bps"] / 1e6, color="grey", ls=":", label="reserved")
ax1.set_xlabel("interfering connections")
ax1.set_ylabel("delivered rate of test connection (Mbit/s, whole frames)")
ax1.legend()
ax2.axhline(0.6, color="red", ls="--", label="paper: ~0.6 %")
ax2.axhline(-0.6, color="red", ls="--")
ax2.set_xlabel("interfering connections")
ax2.set_ylabel("deviation from 50 Mbit/s (%)")
ax2.legend()
fig.suptitle("EtheReal Fig. 4: 50 Mbit/s test connection vs interferers" + (" (quick)" if res["quick"] else ""))
fig.tight_layout()
fig.savefig(f"{out}/fig4.png", dpi=120)
