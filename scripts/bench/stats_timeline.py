"""A timeline of clairfs mounts while a benchmark runs: every mount whose
directory name matches --names (any clairfs FUSE mount by default) has its
.clairfs/stats.json read every --interval seconds, and the lines that changed
in staging, opens or waits are printed with the seconds since the first
mount was seen:

  /usr/bin/python3 scripts/bench/stats_timeline.py [--seconds S] [--interval I]
      [--names mnt0,mnt1] [--jsonl FILE]

Start it before the benchmark (it waits for the mounts); --jsonl keeps every
sample (all numeric fields, flattened). docs/benchmarks.md ("Where the
large-file first epoch waits") shows what it was used for.
"""
import argparse
import json
import os
import sys
import time

MiB = 1 << 20


def mounts(names):
    found = []
    with open("/proc/mounts") as f:
        for line in f:
            _, mnt, kind = line.split()[:3]
            if kind.startswith("fuse") and (not names or os.path.basename(mnt) in names):
                if os.path.exists(os.path.join(mnt, ".clairfs", "stats.json")):
                    found.append(mnt)
    return found


def flat(value, prefix=""):
    out = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(flat(v, prefix + k + "."))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[prefix[:-1]] = value
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600, help="stop after this long [600]")
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between samples [0.2]")
    ap.add_argument("--names", default="", help="mount directory names, comma-separated [any]")
    ap.add_argument("--jsonl", help="write every sample here")
    args = ap.parse_args()
    names = [n for n in args.names.split(",") if n]
    keep = open(args.jsonl, "w") if args.jsonl else None
    start = time.time()
    t0 = None
    shown = {}
    while time.time() - start < args.seconds:
        for mnt in mounts(names):
            try:
                with open(os.path.join(mnt, ".clairfs", "stats.json")) as f:
                    d = flat(json.load(f))
            except (OSError, ValueError):
                continue  # unmounting, or a snapshot being replaced
            now = time.time()
            t0 = now if t0 is None else t0
            g = lambda k: d.get(k, 0)
            if keep:
                keep.write(json.dumps({"t": now - t0, "mount": mnt, **d}) + "\n")
            state = (g("prefetch.opens"), int(g("cluster.staging.packs_done")),
                     int(g("cluster.source.direct_bytes") / (64 * MiB)))
            if shown.get(mnt) == state:
                continue
            shown[mnt] = state
            print("%7.1f s %s: packs staged %d/%d, opens %d (ready %d), stall %.1f s, "
                  "from the dataset dir %d MiB, from peers %d MiB" % (
                      now - t0, os.path.basename(mnt), g("cluster.staging.packs_done"),
                      g("cluster.staging.packs_total"), g("prefetch.opens"),
                      g("prefetch.ready"), g("prefetch.stall_ns") / 1e9,
                      g("cluster.source.direct_bytes") / MiB, g("cluster.peers.bytes") / MiB),
                  flush=True)
        time.sleep(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
