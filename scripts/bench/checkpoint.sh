#!/usr/bin/env bash
# Checkpoints written through the writable area (writes_dir) against the same
# written straight to the throttled stand-in for a shared file system
# (REFERENCE.md section 5; reads and fsynced writes throttled) and to the
# local disk. Two clairfsd ranks on this host (two nodes), writes_local on the
# local disk, writes_persist on the stand-in.
#   single   one file of --mib MiB written by one process on node 0;
#   sharded  8 files of --mib/8 MiB, one writer process each, 4 per node.
# Seconds from the writers' start until
#   closed    the last close returned (what the training step waits for);
#   durable   direct and local: the writers' fsync of each file returned;
#             clairfs: both daemons' drains have every file fsynced in persist;
#   readable  on the other node: direct at close (one shared file system);
#             clairfs: every file has its full size through the other
#             node's mount.
# Page caches dropped before each run; alternating repeats.
# The stand-in's page cache takes buffered writes at memory speed (the
# throttle applies where they are fsynced), as a client's write-back cache
# does while it has room. --sync mounts it `sync` instead: every write waits
# for the throttled device, as on a shared file system whose clients cannot
# absorb a checkpoint (no room, or every node writing at once).
#
# usage: scripts/bench/checkpoint.sh [--mib M] [--mbps B] [--iops I] [--repeats R] [--sync]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
PY=/usr/bin/python3
mib=1024 mbps=100 iops=500 repeats=3 sync=0
while (($#)); do
  case $1 in
    --mib) mib=$2; shift 2 ;; --mbps) mbps=$2; shift 2 ;; --iops) iops=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;; --sync) sync=1; shift ;;
    *) echo "usage: $0 [--mib M] [--mbps B] [--iops I] [--repeats R] [--sync]" >&2; exit 2 ;;
  esac
done
source "$repo/scripts/bench/throttle.sh"
bench_workspace ckpt $((mib * 4 / 1024 + 2)) "$mbps" "$iops"
pfs_throttle_writes
if ((sync)); then
  mount -o remount,sync "$PFS_MNT"
  PFS_DESC+=", mounted sync"
fi
echo "bench: checkpoints of $mib MiB; the stand-in: $PFS_DESC" >&2
mkdir -p "$W/src/d" && echo x >"$W/src/d/a"
"$BIN/clairfs-partition" pack "$W/src" "$W/ds" --partitions 2 >/dev/null
pfs_enter
WRITER=$repo/scripts/bench/ckpt_writer.py

paths() {  # paths CASE ROOT0 ROOT1: the files, node 0's under ROOT0, node 1's under ROOT1
  case $1 in
    single) echo "$2/ckpt/model.bin" ;;
    sharded) for i in 0 1 2 3; do echo "$2/ckpt/shard-$i.bin"; done
             for i in 4 5 6 7; do echo "$3/ckpt/shard-$i.bin"; done ;;
  esac
}
size_of() { [[ $1 == single ]] && echo "$mib" || echo $((mib / 8)); }

# run CASE WAY N: prints "CASE WAY closed durable readable"
run() {
  local case=$1 way=$2 n=$3 m
  m=$(size_of "$case")
  drop_caches
  case $way in
    direct|local)
      local root=$PFS_MNT/direct-$n
      [[ $way == local ]] && root=$W/local-$n
      mapfile -t files < <(paths "$case" "$root" "$root")
      "$PY" "$WRITER" --mib "$m" --fsync "${files[@]}" >"$W/w.json"
      "$PY" -c 'import json, sys; w = json.load(open(sys.argv[1]))
print(sys.argv[2], sys.argv[3], "%.2f %.2f %.2f" % (w["closed"] - w["start"], w["durable"] - w["start"], w["closed"] - w["start"]))' \
        "$W/w.json" "$case" "$way"
      rm -rf "$root"
      ;;
    clairfs)
      "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$W/ds" --mount "$W/mnt{rank}" --writes-dir outputs \
        --writes-local "$W/wl-$n-{rank}" --writes-persist "$PFS_MNT/persist-$n" >"$W/daemons-$n.log" 2>&1 &
      launcher=$!
      "$BIN/clairfs-wait" "$W/mnt0" "$W/mnt1" --timeout 60 --quiet
      drop_caches
      mapfile -t files < <(paths "$case" "$W/mnt0/outputs" "$W/mnt1/outputs")
      "$PY" "$WRITER" --mib "$m" "${files[@]}" >"$W/w.json"
      # The other node's view of each file: mnt0 <-> mnt1.
      "$PY" - "$W/w.json" "$case" $((m << 20)) "$W/mnt0" "$W/mnt1" "${files[@]}" <<'PYEOF'
import json, os, sys, time
w = json.load(open(sys.argv[1]))
case, size, mnt0, mnt1, files = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
other = [f.replace(mnt0, "@1").replace(mnt1, mnt0).replace("@1", mnt1) for f in files]
durable = readable = None
while durable is None or readable is None:
    now = time.time()
    if durable is None:
        left = 0
        for m in (mnt0, mnt1):
            s = json.load(open(m + "/.clairfs/stats.json"))["writes"]
            left += s["steps_pending"] + s["files_unsettled"]
        if left == 0:
            durable = now
    if readable is None and all(os.path.exists(f) and os.stat(f).st_size == size for f in other):
        readable = now
    if now - w["start"] > 600:
        sys.exit("not drained within 600 s")
    time.sleep(0.02)
print(case, "clairfs", "%.2f %.2f %.2f" % (w["closed"] - w["start"], durable - w["start"], readable - w["start"]))
PYEOF
      stop_ranks
      rm -rf "$PFS_MNT/persist-$n" "$W"/wl-"$n"-*
      ;;
  esac
}

results=$W/results.txt
: >"$results"
for r in $(seq 1 "$repeats"); do
  ways=(direct clairfs local)
  ((r % 2 == 0)) && ways=(local clairfs direct)
  for case in single sharded; do
    for way in "${ways[@]}"; do
      run "$case" "$way" "$r" | tee -a "$results" >&2
    done
  done
done
"$PY" - "$results" "$mib" "$mbps" <<'PYEOF'
import collections, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    case, way, *t = line.split()
    rows[(case, way)].append([float(x) for x in t])
def rng(v): return "%.2f-%.2f" % (min(v), max(v)) if len(v) > 1 else "%.2f" % v[0]
print("| case | way | closed (s) | durable (s) | readable on the other node (s) |")
print("| --- | --- | --- | --- | --- |")
for case in ("single", "sharded"):
    for way in ("direct", "clairfs", "local"):
        v = rows.get((case, way))
        if v:
            print("| %s | %s | %s |" % (case, way, " | ".join(rng([x[i] for x in v]) for i in range(3))))
for case in ("single", "sharded"):
    d, c = rows.get((case, "direct")), rows.get((case, "clairfs"))
    if d and c:
        for i, what in ((0, "closed"), (1, "durable")):
            ratios = [dx[i] / cx[i] for dx, cx in zip(d, c) if cx[i] > 0]
            print("%s: %s, direct / clairfs: %s" % (case, what, rng(ratios)))
PYEOF
