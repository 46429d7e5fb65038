#!/usr/bin/env bash
# What one file costs a Python training process, warm: the same small JPEGs read
# from the page cache of the local disk and from the page cache of a clairfs
# mount (read once before, opens declined: nothing but the ioctl below reaches
# the daemon), one process, no other load.
#   os calls     os.open + os.read + os.close
#   isatty       os.isatty on an open file: Python's open() asks this of every
#                file it opens (ioctl TCGETS), and FUSE sends every ioctl to the daemon
#   open+read    Python's open(path, "rb").read()
#   pil_loader   what torchvision's ImageFolder does per sample: open, PIL decode, RGB
#   open+read, reporter's open   the same through the order reporter's open()
#                (scripts/report: what builtins.open is in a job under clairfs-run),
#                which spares the isatty ioctl on the mount
#   pil_loader, reporter's open  pil_loader as it runs in a job under clairfs-run
#                (no request reaches the daemon: no round trip, no wakeup)
# Median over --rounds rounds of 2,000 files each, microseconds per file.
#
# usage: scripts/bench/open_cost.sh [--rounds R] [-- CLAIRFSD_OPTION...]
# (options after -- go to clairfsd, e.g. -- --threads 1)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
PY=/usr/bin/python3
rounds=5
daemon_args=()
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --) shift; daemon_args=("$@"); break ;;
    *) echo "usage: $0 [--rounds R] [-- CLAIRFSD_OPTION...]" >&2; exit 2 ;;
  esac
done
W=$(mktemp -d "${TMPDIR:-/var/tmp}/clairfs-open-cost.XXXXXX")
pid=""
cleanup() {
  fusermount3 -u "$W/mnt" 2>/dev/null || true
  [[ -n $pid ]] && wait "$pid" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT

$PY "$repo/scripts/make_imagefolder.py" "$W/data" --classes 4 --per-class 500 >/dev/null
"$BIN/clairfs-partition" pack "$W/data" "$W/packed" --partitions 2 >/dev/null
"$BIN/clairfsd" --dataset "$W/packed" --mount "$W/mnt" "${daemon_args[@]}" >"$W/log" 2>&1 &
pid=$!
"$BIN/clairfs-wait" "$W/mnt" --quiet --timeout 30 || { cat "$W/log"; exit 1; }
cat "$W"/mnt/train/*/* "$W"/data/train/*/* >/dev/null  # both in the page cache

$PY - "$W" "$rounds" "$repo/scripts/report" <<'PY'
import os, statistics, sys, time
from PIL import Image
w, rounds = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from clairfs_report import spare
trees = {"local disk": w + "/data/train", "clairfs mount": w + "/mnt/train"}
files = {k: sorted(os.path.join(r, f) for r, _, n in os.walk(v) for f in n) for k, v in trees.items()}

def os_calls(p):
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 1 << 20)
    os.close(fd)

def isatty(p):
    fd = os.open(p, os.O_RDONLY)
    t = time.perf_counter()
    os.isatty(fd)
    t = time.perf_counter() - t
    os.close(fd)
    return t

def open_read(p):
    with open(p, "rb") as f:
        f.read()

def spared_read(p):
    with spare.open(p, "rb") as f:
        f.read()

def pil_loader(p):
    with open(p, "rb") as f:
        Image.open(f).convert("RGB")

def spared_pil_loader(p):
    with spare.open(p, "rb") as f:
        Image.open(f).convert("RGB")

def per_file(fn, paths):
    t = time.perf_counter()
    inner = sum(fn(p) or 0 for p in paths)
    return (inner if fn is isatty else time.perf_counter() - t) / len(paths) * 1e6

tests = [("os calls", os_calls), ("isatty", isatty), ("open+read", open_read),
         ("open+read, reporter's open", spared_read), ("pil_loader", pil_loader),
         ("pil_loader, reporter's open", spared_pil_loader)]
res = {(t, k): [] for t, _ in tests for k in trees}
for _ in range(rounds):
    for t, fn in tests:
        for k in trees:
            res[(t, k)].append(per_file(fn, files[k]))
n = len(files["local disk"])
print("Warm reads of %d JPEG files (about 5 KiB), one Python process, median of %d rounds, "
      "microseconds per file." % (n, rounds))
print()
print("| per file | local disk | clairfs mount | difference |")
print("| --- | --- | --- | --- |")
for t, _ in tests:
    a = statistics.median(res[(t, "local disk")])
    b = statistics.median(res[(t, "clairfs mount")])
    print("| %s | %.1f us | %.1f us | %+.1f us |" % (t, a, b, b - a))
PY
python3 -c 'import json, sys; print("daemon requests:", json.dumps(json.load(open(sys.argv[1]))["requests"]))' \
  "$W/mnt/.clairfs/stats.json"
