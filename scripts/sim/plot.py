#!/usr/bin/env python3
"""Draws clairfs-sim's CSV rows (docs/simulation.md) as two PNGs in OUT_DIR:
  sim-scaling.png  epoch time against the node count, per policy (log x): the
                   first epoch and the mean of the later ones
  sim-sources.png  where the job's bytes came from (RAM, local SSD, peers,
                   shared file system), per policy and node count, over every epoch
usage: plot.py RUN.csv [RUN.csv ...] OUT_DIR (needs python3-matplotlib: run it
with Debian's /usr/bin/python3). The CSVs may come from several runs (one node
count each, or a sweep); a policy, node count and epoch may appear once.
Exit 1 naming the file and line of the first bad row, 2 on bad usage."""
import csv
import os
import sys

# The columns this script reads, and how each is parsed.
COLUMNS = {"policy": str, "epoch": int, "seconds": float, "nodes": int, "ram_bytes": int,
           "local_bytes": int, "peer_bytes": int, "shared_fs_bytes": int}
SOURCES = [("ram_bytes", "RAM"), ("local_bytes", "local SSD"), ("peer_bytes", "peers"),
           ("shared_fs_bytes", "shared file system")]


class BadInput(Exception):
    pass


def read_runs(paths):
    """{(policy, nodes): {epoch: row}} over every file, rows parsed."""
    runs, seen = {}, {}
    for path in paths:
        try:
            f = open(path, newline="")
        except OSError as e:
            raise BadInput("cannot read %s: %s" % (path, e.strerror))
        with f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise BadInput("%s: empty, not a clairfs-sim CSV" % path)
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise BadInput("%s: not a clairfs-sim CSV (no column %s; an older clairfs-sim "
                               "writes no nodes column)" % (path, ", ".join(missing)))
            at = {c: header.index(c) for c in COLUMNS}
            rows = 0
            for fields in reader:
                line = reader.line_num
                if len(fields) != len(header):
                    raise BadInput("%s line %d: %d fields, the header has %d"
                                   % (path, line, len(fields), len(header)))
                parsed = {}
                for column, kind in COLUMNS.items():
                    try:
                        parsed[column] = kind(fields[at[column]])
                    except ValueError:
                        raise BadInput("%s line %d: bad %s '%s'" % (path, line, column,
                                                                     fields[at[column]]))
                if parsed["nodes"] < 1 or parsed["epoch"] < 0 or parsed["seconds"] < 0:
                    raise BadInput("%s line %d: nodes, epoch or seconds out of range"
                                   % (path, line))
                key = (parsed["policy"], parsed["nodes"], parsed["epoch"])
                if key in seen:
                    raise BadInput("%s line %d: %s on %d node(s), epoch %d, already in %s"
                                   % ((path, line) + key + (seen[key],)))
                seen[key] = "%s line %d" % (path, line)
                runs.setdefault(key[:2], {})[parsed["epoch"]] = parsed
                rows += 1
            if rows == 0:
                raise BadInput("%s: a header and no rows" % path)
    return runs


def policies_in_order(runs):
    """The policies as they first appear (clairfs-sim's order)."""
    out = []
    for policy, _ in runs:
        if policy not in out:
            out.append(policy)
    return out


def plot_scaling(plt, runs, path):
    fig, (first, later) = plt.subplots(1, 2, figsize=(11, 4.5), sharey=False)
    any_later = False
    for policy in policies_in_order(runs):
        nodes = sorted(n for p, n in runs if p == policy)
        epochs = [runs[(policy, n)] for n in nodes]
        firsts = [(n, e[0]["seconds"]) for n, e in zip(nodes, epochs) if 0 in e]
        first.plot([n for n, _ in firsts], [s for _, s in firsts], marker="o", label=policy)
        means = [(n, sum(r["seconds"] for k, r in e.items() if k > 0) / (len(e) - (0 in e)))
                 for n, e in zip(nodes, epochs) if any(k > 0 for k in e)]
        if means:
            any_later = True
            later.plot([n for n, _ in means], [s for _, s in means], marker="o", label=policy)
    for ax, title in ((first, "first epoch (staging included)"), (later, "later epochs (mean)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    first.legend(fontsize=8)
    if any_later:
        later.legend(fontsize=8)
    else:
        later.text(0.5, 0.5, "one epoch per run", ha="center", va="center",
                   transform=later.transAxes)
    fig.suptitle("clairfs-sim: epoch time against the node count (simulated, uncalibrated)",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_sources(plt, runs, path):
    bars = []  # (label, {source: share of the bytes})
    for policy in policies_in_order(runs):
        for n in sorted(n for p, n in runs if p == policy):
            totals = {c: sum(r[c] for r in runs[(policy, n)].values()) for c, _ in SOURCES}
            whole = sum(totals.values())
            shares = {c: (100.0 * v / whole if whole else 0.0) for c, v in totals.items()}
            bars.append(("%s\n%d node%s" % (policy, n, "" if n == 1 else "s"), shares))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(bars) + 2), 5))
    xs = range(len(bars))
    bottom = [0.0] * len(bars)
    for column, label in SOURCES:
        heights = [shares[column] for _, shares in bars]
        ax.bar(xs, heights, 0.7, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label for label, _ in bars], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of the bytes the job read (all epochs)")
    ax.set_title("clairfs-sim: where the job's reads were served from", fontsize=11)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv):
    if len(argv) < 3 or any(a in ("-h", "--help") for a in argv[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    paths, out = argv[1:-1], argv[-1]
    if not os.path.isdir(out):
        print("plot.py: %s is not a directory (the last argument is where the PNGs go)" % out,
              file=sys.stderr)
        return 2
    try:
        runs = read_runs(paths)
    except BadInput as e:
        print("plot.py: %s" % e, file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: python3-matplotlib is not installed (apt-get install "
              "python3-matplotlib; run this with /usr/bin/python3)", file=sys.stderr)
        return 1
    for name, draw in (("sim-scaling.png", plot_scaling), ("sim-sources.png", plot_sources)):
        path = os.path.join(out, name)
        draw(plt, runs, path)
        print("plot.py: wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
