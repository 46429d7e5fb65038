#!/bin/bash
# Single-node mount benchmark: the same files, in the same seeded random
# order, read natively (tmpfs warm, ext4 cold), through clairfsd (cold from
# local packs, warm from the page cache, and from the daemon's RAM cache), and
# through libfuse's passthrough_ll example (the FUSE reference). Plus one
# cold clairfsd pass with --pack-readahead (packs streamed into the page cache).
#
# usage: scripts/bench/fuse.sh [--quick]
# env:   BUILD      build directory with bin/clairfsd, clairfs-partition, clairfs-bench
#                   [repo/build]
#        BENCH_DIR  work directory on the disk under test [/var/tmp/clairfs-bench]
#        THREADS    reader threads of clairfs-bench [1]
#        SIZES      file sizes to sweep [128K 512K 2M 8M]
#        META_FILES files of the metadata test, 0 skips it [100000]
#        REPEAT     rounds; every source runs once per round, interleaved, and
#                   the table shows the median (and the range) [3]
#        VARIANT    NAME=OPTIONS: one more clairfsd source, "clairfs+NAME" (cold,
#                   warm, ram), started with these options in every round
#                   (e.g. VARIANT="spin200=--fuse-spin-us 200") []
#        SKIP       sources left out, e.g. "passthrough_ll clairfs+pack_readahead" []
# Needs root (drop_caches). Writes results-tTHREADS.jsonl and a markdown
# table (table-tTHREADS.md) into BENCH_DIR; the generated trees are kept for
# reruns.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$REPO/build}
BIN=$BUILD/bin
WORK=${BENCH_DIR:-/var/tmp/clairfs-bench}
SHM=/dev/shm/clairfs-bench.$$
THREADS=${THREADS:-1}
SIZES=${SIZES:-128K 512K 2M 8M}
META_FILES=${META_FILES:-100000}
REPEAT=${REPEAT:-3}
VARIANT=${VARIANT:-}
SKIP=${SKIP:-}
PY=/usr/bin/python3
SEED=42
if [ "${1:-}" = "--quick" ]; then
  SIZES="128K"
  META_FILES=10000
  REPEAT=1
fi

die() { echo "fuse.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (drop_caches, mounts)"
for b in clairfsd clairfs-partition clairfs-bench; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing: build it (make $b)"
done
mkdir -p "$WORK" "$BUILD/bench"
RESULTS=$WORK/results-t$THREADS.jsonl
: >"$RESULTS"
MNT=$WORK/mnt
mkdir -p "$MNT"

# The libfuse reference, compiled here from Debian's examples; never committed.
PT=$BUILD/bench/passthrough_ll
EX=/usr/share/doc/libfuse3-dev/examples
if [ ! -x "$PT" ]; then
  [ -f "$EX/passthrough_ll.c" ] || die "$EX/passthrough_ll.c missing (apt install libfuse3-dev)"
  gcc -O2 -o "$PT" "$EX/passthrough_ll.c" $(pkg-config --cflags --libs fuse3)
fi

DAEMON=""
ROUND=0
cleanup() {
  if [ -n "$DAEMON" ]; then kill "$DAEMON" 2>/dev/null || true; wait "$DAEMON" 2>/dev/null || true; fi
  fusermount3 -u -z "$MNT" 2>/dev/null || true
  rm -rf "$SHM"
}
trap cleanup EXIT

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
wait_mount() {
  local i
  for i in $(seq 1 100); do
    grep -qF " $MNT fuse" /proc/mounts && return 0
    sleep 0.1
  done
  die "mount at $MNT did not appear"
}
unmount() {
  kill "$DAEMON" 2>/dev/null || true
  wait "$DAEMON" 2>/dev/null || true
  DAEMON=""
  fusermount3 -u -z "$MNT" 2>/dev/null || true
}

# bench SET SOURCE STATE ROOT LIST [extra clairfs-bench args]
bench() {
  local set=$1 source=$2 state=$3 root=$4 list=$5
  shift 5
  local line
  # A run with failed files still prints its line (with "errors"); keep going.
  line=$("$BIN/clairfs-bench" --list "$list" --root "$root" --seed "$SEED" \
    --threads "$THREADS" --json --label "$source" "$@") || true
  [ -n "$line" ] || die "clairfs-bench printed nothing for $set $source $state"
  echo "  $set $source $state: $line"
  echo "{\"set\": \"$set\", \"round\": $ROUND, \"state\": \"$state\", \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"result\": $line}" >>"$RESULTS"
}

# make_tree DIR COUNT SIZE: COUNT random (incompressible, like JPEGs) files of
# SIZE bytes, 100 per directory.
make_tree() {
  [ -f "$1.complete" ] && return 0
  rm -rf "$1"
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import os, random, sys
root, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
for i in range(count):
    d = os.path.join(root, "class%04d" % (i // 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "img%06d.bin" % i), "wb") as f:
        f.write(rng.randbytes(size))
open(root + ".complete", "w").close()
PYEOF
}

# run_set SET MODE COUNT SIZE: every source on one tree.
run_set() {
  local set=$1 mode=$2 count=$3 size=$4
  local src=$WORK/src-$set out=$WORK/out-$set list=$WORK/list-$set
  local margs=()
  [ "$mode" = metadata ] && margs=(--metadata)
  echo "== $set: $count files of $size bytes, mode $mode, $THREADS thread(s)"
  make_tree "$src" "$count" "$size"
  "$BIN/clairfs-bench" --walk --root "$src" --write-list "$list"
  if [ ! -f "$out/manifest" ]; then
    "$BIN/clairfs-partition" pack "$src" "$out" --partitions 4 --force >/dev/null
  fi

  local r
  for r in $(seq 1 "$REPEAT"); do
    ROUND=$r
    run_round "$set" "$mode" "$src" "$out" "$list" "${margs[@]+"${margs[@]}"}"
  done
}

skipped() { [[ " $SKIP " == *" $1 "* ]]; }

# clairfs_passes SOURCE [clairfsd options]: a fresh daemon's cold, warm and
# (read mode) ram passes, in run_round's variables.
clairfs_passes() {
  local source=$1
  shift
  "$BIN/clairfsd" --dataset "$out" --mount "$MNT" --ram-cache 4G --log-level warn "$@" &
  DAEMON=$!
  wait_mount
  drop_caches
  bench "$set" "$source" cold "$MNT" "$list" "${margs[@]+"${margs[@]}"}"
  bench "$set" "$source" warm "$MNT" "$list" "${margs[@]+"${margs[@]}"}"
  if [ "$mode" = read ]; then
    drop_caches
    bench "$set" "$source" ram "$MNT" "$list" "${margs[@]+"${margs[@]}"}"
  fi
  cp "$MNT/.clairfs/stats.json" "$WORK/stats-$set-$source.json"
  unmount
}

# run_round SET MODE SRC OUT LIST [bench args]: each source once.
run_round() {
  local set=$1 mode=$2 src=$3 out=$4 list=$5
  shift 5
  local margs=("$@")
  # native tmpfs, warm (second pass)
  rm -rf "$SHM" && mkdir -p "$SHM" && cp -a "$src" "$SHM/tree"
  bench "$set" native-tmpfs warm-discard "$SHM/tree" "$list" "${margs[@]+"${margs[@]}"}" >/dev/null
  bench "$set" native-tmpfs warm "$SHM/tree" "$list" "${margs[@]+"${margs[@]}"}"
  rm -rf "$SHM"

  # native ext4 (the disk), cold
  drop_caches
  bench "$set" native-disk cold "$src" "$list" "${margs[@]+"${margs[@]}"}"

  # clairfsd: cold (fresh daemon, page cache dropped: data from local packs),
  # warm (second pass: kernel page cache), ram (page cache dropped again:
  # the daemon's RAM cache answers every read)
  # With a variant, the two take turns going first: the second cold pass
  # reads packs the first one just read, which the VM's host may still cache.
  if [ -n "$VARIANT" ] && [ $((ROUND % 2)) = 0 ]; then
    # shellcheck disable=SC2086  # the variant's options, split at spaces
    clairfs_passes "clairfs+${VARIANT%%=*}" ${VARIANT#*=}
    clairfs_passes clairfs
  elif [ -n "$VARIANT" ]; then
    clairfs_passes clairfs
    # shellcheck disable=SC2086
    clairfs_passes "clairfs+${VARIANT%%=*}" ${VARIANT#*=}
  else
    clairfs_passes clairfs
  fi

  # passthrough_ll (cache=always, multithreaded) over the source tree
  # clairfsd with pack_readahead: the packs are read sequentially into the
  # page cache in the background while the same cold pass runs.
  if [ "$mode" = read ] && ! skipped clairfs+pack_readahead; then
    "$BIN/clairfsd" --dataset "$out" --mount "$MNT" --ram-cache 4G --log-level warn \
      --pack-readahead 16G &
    DAEMON=$!
    wait_mount
    drop_caches
    bench "$set" clairfs+pack_readahead cold "$MNT" "$list" "${margs[@]+"${margs[@]}"}"
    unmount
  fi

  # passthrough_ll keeps one fd open per inode it has seen, so it can only
  # serve a tree with fewer files than the fd limit (raised to the hard limit).
  local count
  count=$(wc -l <"$list")
  skipped passthrough_ll && return 0
  if [ "$count" -ge $(( $(ulimit -Hn) - 100 )) ]; then
    echo "  $set passthrough_ll: skipped, $count files exceed the fd limit $(ulimit -Hn)"
    return 0
  fi
  (ulimit -n "$(ulimit -Hn)" && exec "$PT" -f -o source="$src",cache=always "$MNT") &
  DAEMON=$!
  wait_mount
  drop_caches
  bench "$set" passthrough_ll cold "$MNT" "$list" "${margs[@]+"${margs[@]}"}"
  bench "$set" passthrough_ll warm "$MNT" "$list" "${margs[@]+"${margs[@]}"}"
  unmount
}

bytes() { numfmt --from=iec "$1"; }
for s in $SIZES; do
  b=$(bytes "$s")
  # ~1.25 GiB of 128 KiB files (10,000, as in REFERENCE.md), ~1 GiB otherwise.
  if [ "$b" -le 131072 ]; then n=10000; else n=$(( (1 << 30) / b )); fi
  [ "${1:-}" = "--quick" ] && n=2000
  run_set "read-$s" read "$n" "$b"
done
[ "$META_FILES" -gt 0 ] && run_set "meta-$META_FILES" metadata "$META_FILES" 1024

"$PY" - "$RESULTS" "$WORK/table-t$THREADS.md" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r["state"] != "warm-discard"]
groups = {}
for r in rows:
    groups.setdefault((r["set"], r["result"]["label"], r["state"]), []).append(r["result"])
def med(key, rs):
    return statistics.median(x[key] for x in rs)
out = ["| set | source | state | files/s (median) | range | MB/s | ratio to native |",
       "| --- | --- | --- | ---: | ---: | ---: | --- |"]
for (s, label, state), rs in groups.items():
    fps = med("files_per_s", rs)
    rng = "%.0f-%.0f" % (min(x["files_per_s"] for x in rs), max(x["files_per_s"] for x in rs))
    if label.startswith("native"):
        ratio = "baseline"
    else:
        base_label, base_state = ("native-disk", "cold") if state == "cold" else ("native-tmpfs", "warm")
        base = med("files_per_s", groups[(s, base_label, base_state)])
        ratio = "%.2fx %s %s" % (fps / base, base_label, base_state)
    errors = sum(x["errors"] for x in rs)
    if errors:
        ratio += " (%d failed opens/reads)" % errors
    out.append("| %s | %s | %s | %.0f | %s | %.0f | %s |" % (
        s, label, state, fps, rng, med("mb_per_s", rs), ratio))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PYEOF
