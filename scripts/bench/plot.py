#!/usr/bin/env python3
"""Plots scripts/bench/train.sh's JSON: epoch time per configuration, and what
the prefetcher served. usage: plot.py TRAIN.json OUT.png (needs python3-matplotlib)."""
import json
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot.py: python3-matplotlib is not installed (apt-get install python3-matplotlib)")

data = json.load(open(sys.argv[1]))
runs = data["runs"]
labels = {"noio": "no I/O (in memory)", "direct": "direct (throttled FS)", "clairfs": "clairfs"}
fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 2]})
epochs = range(len(runs["noio"]))
width = 0.27
for k, (key, label) in enumerate(labels.items()):
    ax.bar([e + (k - 1) * width for e in epochs], [r["seconds"] for r in runs[key]], width,
           label=label)
ax.set_xticks(list(epochs))
ax.set_xlabel("epoch")
ax.set_ylabel("seconds")
ax.set_title("training epoch time, %d files" % data["files"])
ax.legend(fontsize=8)
p = data.get("prefetch_rank0", {})
hits = p.get("open_hits", {})
parts = [("in page cache", hits.get("page_cache", 0)),
         ("in daemon RAM,\npushed at open", hits.get("ram", 0)),
         ("not ready", hits.get("not_ready", 0))]
parts = [(n, v) for n, v in parts if v]
if parts:
    bx.pie([v for _, v in parts], labels=["%s\n%d" % (n, v) for n, v in parts], startangle=90)
    bx.set_title("where opens found their file\n(clairfs, rank 0)")
else:
    bx.axis("off")
fig.suptitle(data["throttle"], fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print("plot.py: wrote %s" % sys.argv[2])
