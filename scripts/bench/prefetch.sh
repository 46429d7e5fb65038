#!/bin/bash
# Prefetch benchmark (issue 5): the first epoch of a training-like job whose
# packs sit on a throttled stand-in for a shared parallel file system
# (REFERENCE.md section 5, scripts/bench/throttle.sh). Two rank processes, each
# a DataLoader-like pipeline: W worker threads (batch j on worker j % W, at
# most W x prefetch_factor batches in flight) and a consumer that "computes"
# COMPUTE_MS per batch. The order is torch's DistributedSampler over
# torchvision's ImageFolder listing. Epoch time (the slower rank) for:
#   noio      the same pipeline without reading (the compute-bound floor)
#   direct    reading the source tree on the throttled file system
#   mount     through clairfsd, packs on the throttled file system, prefetch off
#   prefetch  the same mount with --prefetch-sampler torch-distributed
# Caches are dropped before every run; the daemon and the readers run inside
# the throttle. Every mode runs REPEAT times, interleaved; the median is shown.
#
# usage: scripts/bench/prefetch.sh
# env:   BUILD [repo/build], BENCH_DIR [/var/tmp/clairfs-bench-prefetch],
#        FILES [2000], SIZE_KIB [64], MBPS [50], IOPS [500], BATCH [16],
#        WORKERS [2], COMPUTE_MS [60], REPEAT [3]
# Needs root, a loop device, cgroup-v1 blkio and /usr/bin/python3 with torch;
# otherwise exits 77 with the reason. Prints a markdown table.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$REPO/build}
BIN=$BUILD/bin
WORK=${BENCH_DIR:-/var/tmp/clairfs-bench-prefetch}
FILES=${FILES:-2000}
SIZE_KIB=${SIZE_KIB:-64}
MBPS=${MBPS:-50}
IOPS=${IOPS:-500}
BATCH=${BATCH:-16}
WORKERS=${WORKERS:-2}
COMPUTE_MS=${COMPUTE_MS:-60}
REPEAT=${REPEAT:-3}
PY=/usr/bin/python3

"$PY" -c 'import torch, torchvision' 2>/dev/null || { echo "SKIP: $PY cannot import torch"; exit 77; }
[[ -x $BIN/clairfsd && -x $BIN/clairfs-partition ]] || { echo "SKIP: build $BIN first"; exit 77; }
source "$REPO/scripts/bench/throttle.sh"

DAEMON=""
cleanup() {
  [[ -n $DAEMON ]] && { fusermount3 -u -z "$WORK/mnt" 2>/dev/null || true; kill "$DAEMON" 2>/dev/null || true; wait "$DAEMON" 2>/dev/null || true; }
  pfs_teardown
}
trap cleanup EXIT
mkdir -p "$WORK"
rc=0
pfs_setup "$WORK" 2 "$MBPS" "$IOPS" || rc=$?
[[ $rc = 0 ]] || { echo "SKIP: throttle unavailable"; exit 77; }

# The source tree (ImageFolder: 10 classes) on the throttled file system, and
# its packs next to it.
"$PY" - "$PFS_MNT/src/train" "$FILES" "$SIZE_KIB" <<'PYEOF'
import os, random, sys
root, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(3)
for i in range(n):
    d = os.path.join(root, "class%02d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "img%05d.jpg" % i), "wb") as f:
        f.write(rng.randbytes(kib * 1024))
PYEOF
"$BIN/clairfs-partition" pack "$PFS_MNT/src" "$PFS_MNT/packs" --partitions 4 >/dev/null

cat >"$WORK/reader.py" <<'PYEOF'
import sys, threading, time
from torch.utils.data import DistributedSampler
from torchvision.datasets import ImageFolder
root, rank, batch, workers, compute, read = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                             int(sys.argv[4]), float(sys.argv[5]) / 1000,
                                             sys.argv[6] == "1")
ds = ImageFolder(root, loader=lambda p: p)
s = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=5)
s.set_epoch(0)
idx = list(s)
batches = [idx[i:i + batch] for i in range(0, len(idx), batch)]
done = [threading.Event() for _ in batches]
consumed = [0]
cv = threading.Condition()
in_flight = workers * 2  # prefetch_factor 2
def worker(w):
    for j in range(w, len(batches), workers):
        with cv:
            cv.wait_for(lambda: j < consumed[0] + in_flight)
        for i in batches[j]:
            if read:
                with open(ds.samples[i][0], "rb") as f:
                    f.read()
        done[j].set()
t0 = time.monotonic()
ts = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
for t in ts: t.start()
for j in range(len(batches)):
    done[j].wait()
    time.sleep(compute)
    with cv:
        consumed[0] = j + 1
        cv.notify_all()
for t in ts: t.join()
print("%.3f" % (time.monotonic() - t0))
PYEOF

run_readers() {  # root read -> epoch seconds of the slower rank
  local a b
  a=$("$PY" "$WORK/reader.py" "$1" 0 "$BATCH" "$WORKERS" "$COMPUTE_MS" "$2" & "$PY" "$WORK/reader.py" "$1" 1 "$BATCH" "$WORKERS" "$COMPUTE_MS" "$2" >"$WORK/r1"; wait)
  b=$(cat "$WORK/r1")
  "$PY" -c "print(max($a, $b))"
}

mount_run() {  # name extra-clairfsd-flags...
  local name=$1
  shift
  mkdir -p "$WORK/mnt"
  "$BIN/clairfsd" --dataset "$PFS_MNT/packs" --mount "$WORK/mnt" "$@" \
    >"$WORK/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 100); do grep -qF " $WORK/mnt fuse.clairfs " /proc/mounts && break; sleep 0.1; done
  local t
  t=$(run_readers "$WORK/mnt/train" 1)
  cp "$WORK/mnt/.clairfs/stats.json" "$WORK/stats-$name.json" 2>/dev/null || true
  fusermount3 -u "$WORK/mnt"
  wait "$DAEMON" || true
  DAEMON=""
  echo "$t"
}

pfs_enter
declare -A RES
for r in $(seq "$REPEAT"); do
  for mode in noio direct mount prefetch; do
    drop_caches
    case $mode in
      noio) t=$(run_readers "$PFS_MNT/src/train" 0) ;;
      direct) t=$(run_readers "$PFS_MNT/src/train" 1) ;;
      mount) t=$(mount_run mount --ram-cache 1G) ;;
      prefetch) t=$(mount_run prefetch --prefetch-sampler torch-distributed --prefetch-root train \
                   --prefetch-seed 5 --prefetch-world-size 2 --prefetch-workers "$WORKERS" \
                   --prefetch-batch-size "$BATCH" --ram-cache 256M) ;;
    esac
    RES[$mode]="${RES[$mode]:-} $t"
    echo "round $r $mode: $t s" >&2
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
NOIO=$(echo "${RES[noio]}" | median)
DIRECT=$(echo "${RES[direct]}" | median)
echo
echo "First epoch, $FILES files of $SIZE_KIB KiB, 2 ranks x $WORKERS workers, batch $BATCH," \
     "$COMPUTE_MS ms compute per batch; $PFS_DESC; median of $REPEAT"
echo
echo "| mode | epoch s (runs) | vs no I/O | vs direct |"
echo "| --- | --- | --- | --- |"
for mode in noio direct mount prefetch; do
  m=$(echo "${RES[$mode]}" | median)
  "$PY" -c "print('| $mode | %s (%s) | %.2fx | %.2fx |' % ('$m', '${RES[$mode]# }'.replace(' ', ', '), $m / $NOIO, $m / $DIRECT))"
done
"$PY" -c 'import json,sys; p=json.load(open(sys.argv[1]))["prefetch"]; print("\nprefetch run: opens %d ready %d stalls %d wait %.0f ms peak %d bytes" % (p["opens"], p["ready"], p["stalls"], p["wait_ns"]/1e6, p["peak_used_bytes"]))' "$WORK/stats-prefetch.json" 2>/dev/null || true
