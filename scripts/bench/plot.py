#!/usr/bin/env python3
"""Plots scripts/bench/train.sh's and keras.sh's JSON files, one row per file
(a script and throttle setting): epoch time per configuration, and where the
prefetcher found the files the training opened (train.sh) or the share of
opens ready per epoch (keras.sh).
usage: plot.py TRAIN.json [TRAIN.json ...] OUT.png (needs python3-matplotlib)."""
import json
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot.py: python3-matplotlib is not installed (apt-get install python3-matplotlib)")

if len(sys.argv) < 3:
    sys.exit(__doc__)
inputs, out = sys.argv[1:-1], sys.argv[-1]
labels = {"noio": "no I/O (in memory)", "direct": "direct (throttled FS)", "clairfs": "clairfs"}
fig, axes = plt.subplots(len(inputs), 2, figsize=(10, 4 * len(inputs)),
                         gridspec_kw={"width_ratios": [3, 2]}, squeeze=False)
for (ax, bx), path in zip(axes, inputs):
    data = json.load(open(path))
    runs = data["runs"]
    these = data.get("labels", labels)
    epochs = range(len(runs[next(iter(these))]))
    width = 0.27
    for k, (key, label) in enumerate(these.items()):
        ax.bar([e + (k - 1) * width for e in epochs], [r["seconds"] for r in runs[key]], width,
               label=label)
    ax.set_xticks(list(epochs))
    ax.set_xlabel("epoch")
    ax.set_ylabel("seconds")
    ax.set_title("%s, %d files\n%s" % (data.get("title", "training epoch time"), data["files"],
                                        data["throttle"]), fontsize=9)
    ax.legend(fontsize=8)
    if "ready_per_epoch" in data:
        for node, shares in enumerate(data["ready_per_epoch"]):
            # An epoch the prefetcher kept no count for (no prediction) is left out.
            known = [(e, v) for e, v in zip(epochs, shares) if v is not None]
            bx.plot([e for e, _ in known], [100 * v for _, v in known], marker="o",
                    label="node %d" % node)
        bx.set_ylim(0, 105)
        bx.set_xticks(list(epochs))
        bx.set_xlabel("epoch")
        bx.set_ylabel("% of opens ready")
        bx.set_title("opens that found their file ready (clairfs)", fontsize=9)
        bx.legend(fontsize=8)
        continue
    prefetch = data.get("prefetch_rank0", {})
    hits = prefetch.get("open_hits", {})
    parts = [("in page cache", hits.get("page_cache", 0)),
             ("in daemon RAM", hits.get("ram", 0)),
             ("not ready", prefetch.get("stalls", 0))]
    parts = [(n, v) for n, v in parts if v]
    if not parts:
        bx.axis("off")
        continue
    bx.pie([v for _, v in parts], labels=["%s\n%d" % (n, v) for n, v in parts], startangle=90)
    bx.set_title("where opens found their file\n(clairfs, rank 0)", fontsize=9)
    if "daemon_reads" in data:
        bx.text(0, -1.45, "READ requests that reached the daemons: %d" % data["daemon_reads"],
                ha="center", fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=100)
print("plot.py: wrote %s" % out)
