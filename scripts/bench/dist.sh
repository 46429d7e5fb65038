#!/usr/bin/env bash
# Four clairfsd ranks on this host (issue 4's benchmark):
#  1. staging: the packs copied by the 4 ranks from a throttled stand-in for a
#     shared file system, beside `cp -r` of the original tree from the same
#     device (caches dropped before each);
#  2. reads: a mount whose data is 75% on other ranks (replicas 1) beside the
#     same files all local (replicas 4), same reader, same order, cold.
# Prints markdown for docs/benchmarks.md.
#
# usage: [PERF=DIR] [STATS=DIR] scripts/bench/dist.sh [--files N] [--kib K] [--mbps M] [--iops I] [--threads T]
# With PERF, each read phase runs under a system-wide `perf record -g`; the
# profiles, summed per thread name and per function, land in DIR. With
# STATS=DIR, rank 0's stats.json after each read phase lands in DIR
# (dist-KIB-LABEL.json: network.reads_sent counts the round trips to peers).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
files=4000 kib=128 mbps=50 iops=500 threads=4
while (($#)); do
  case $1 in
    --files) files=$2; shift 2 ;; --kib) kib=$2; shift 2 ;; --mbps) mbps=$2; shift 2 ;;
    --iops) iops=$2; shift 2 ;; --threads) threads=$2; shift 2 ;;
    *) echo "usage: $0 [--files N] [--kib K] [--mbps M] [--iops I] [--threads T]" >&2; exit 2 ;;
  esac
done
source "$repo/scripts/bench/throttle.sh"
bench_workspace dist 8 "$mbps" "$iops"

echo "bench: $files files of $kib KiB on the stand-in ($PFS_DESC)" >&2
/usr/bin/python3 - "$PFS_MNT/src" "$files" "$kib" <<'PY'
import os, random, sys
root, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(3)
for i in range(n):
    d = os.path.join(root, "class_%03d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "img_%06d.jpg" % i), "wb") as f:
        f.write(rng.randbytes(kib * 1024))
PY
"$BIN/clairfs-partition" pack "$PFS_MNT/src" "$PFS_MNT/r1" --partitions 8 --replicas 1 >/dev/null
"$BIN/clairfs-partition" pack "$PFS_MNT/src" "$PFS_MNT/r4" --partitions 8 --replicas 4 >/dev/null
bytes=$(du -sb "$PFS_MNT/src" | cut -f1)
pfs_enter
now() { date +%s.%N; }
elapsed() { awk "BEGIN { printf \"%.2f\", $(now) - $1 }"; }

# 1. cp -r of the tree vs staging of the packs (replicas 1: each pack copied once).
drop_caches; t0=$(now); cp -r "$PFS_MNT/src" "$W/copy"; sync; t_cp=$(elapsed "$t0"); rm -rf "$W/copy"
start_ranks() {  # start_ranks PACKDIR
  rm -rf "$W"/ssd*; mkdir -p "$W"/mnt{0,1,2,3}
  "$MPIEXEC" -n 4 "$BIN/clairfsd" --dataset "$1" --mount "$W/mnt{rank}" --local-dir "$W/ssd{rank}" \
    --ram-cache 64M >"$W/log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$W"/mnt{0,1,2,3} --quiet --timeout 120 || { grep -v "config:" "$W/log" | tail -20; exit 1; }
}
staged_all() {
  /usr/bin/python3 - "$W" <<'PY'
import json, sys, time
w = sys.argv[1]
while True:
    s = [json.load(open("%s/mnt%d/.clairfs/stats.json" % (w, r)))["cluster"]["staging"] for r in range(4)]
    if all(x["finished"] for x in s):
        print("%.2f" % max(x["seconds"] for x in s))
        break
    time.sleep(0.2)
PY
}
drop_caches
start_ranks "$PFS_MNT/r1"
t_stage=$(staged_all)

# 2. reads, cold: 75% remote (r1) vs all local (r4), same list and order.
"$BIN/clairfs-bench" --walk --root "$PFS_MNT/src" --write-list "$W/list" >/dev/null
read_bench() {  # read_bench LABEL -> files/s
  drop_caches
  local perf=()  # PERF=DIR: a system-wide profile of the read, DIR/dist-KIB-LABEL.data and .txt
  [[ -n ${PERF:-} ]] && mkdir -p "$PERF" && perf=(perf record -q -a -g -F 999 -o "$PERF/dist-$kib-$1.data" --)
  local rate
  rate=$("${perf[@]}" "$BIN/clairfs-bench" --list "$W/list" --root "$W/mnt0" --threads "$threads" --seed 7 --json \
    --label "$1" | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print('%.0f %.0f' % (d['files_per_s'], d['mb_per_s']))") || return
  [[ -n ${STATS:-} ]] && mkdir -p "$STATS" && cp "$W/mnt0/.clairfs/stats.json" "$STATS/dist-$kib-$1.json"
  echo "$rate"
}
remote=$(read_bench remote75)
stop_ranks
drop_caches
start_ranks "$PFS_MNT/r4"
staged_all >/dev/null
local_=$(read_bench local100)
stop_ranks

r_fps=${remote% *} l_fps=${local_% *}
if [[ -n ${PERF:-} ]]; then
  for label in remote75 local100; do
    data=$PERF/dist-$kib-$label.data
    { echo "# perf report --sort comm (thread names), then --sort comm,sym (the top 40)"
      perf report -i "$data" --stdio --no-children --sort comm -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25 || true
      echo
      perf report -i "$data" --stdio --no-children --sort comm,sym -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40 || true
    } >"${data%.data}.txt"
  done
fi
echo
echo "Setting: $files files x $kib KiB ($(awk "BEGIN {printf \"%.2f\", $bytes/2^30}") GiB) on the stand-in for a shared file system ($PFS_DESC); 4 clairfsd ranks on this host; 8 partitions."
echo
echo "| measurement | baseline | clairfs | ratio |"
echo "| --- | --- | --- | --- |"
echo "| get the data onto node-local disk | cp -r of the tree: $t_cp s | staging of the packs by 4 ranks: $t_stage s | $(awk "BEGIN {printf \"%.2f\", $t_stage/$t_cp}")x the time |"
echo "| cold reads on rank 0, $threads threads, random order | all data local (replicas 4): $l_fps files/s (${local_#* } MB/s) | 75% on other ranks (replicas 1): $r_fps files/s (${remote#* } MB/s) | $(awk "BEGIN {printf \"%.2f\", $r_fps/$l_fps}")x |"
