#!/usr/bin/env bash
# Packing throughput of clairfs-partition beside `tar -cf - SRC | zstd -T0`
# on the same files in the same run, cold (caches dropped, root only) and
# warm, alternating the two tools; then the manifest's size and load time for
# one million files. Prints a markdown table for docs/benchmarks.md.
#
# usage: scripts/bench/partition.sh [--gib G] [--file-kib K] [--runs R] [--dir DIR]
#   defaults: 2 GiB of 128 KiB files, 3 runs, DIR a new directory under $TMPDIR or /tmp.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
gib=2 kib=128 runs=3 dir=""
while (($#)); do
  case $1 in
    --gib) gib=$2; shift 2 ;;
    --file-kib) kib=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "usage: $0 [--gib G] [--file-kib K] [--runs R] [--dir DIR]" >&2; exit 2 ;;
  esac
done
[[ -x $BIN/clairfs-partition ]] || { echo "build first: scripts/setup.sh" >&2; exit 1; }
command -v zstd >/dev/null || { echo "zstd is not installed (apt-get install zstd)" >&2; exit 1; }
own_dir=0
if [[ -z $dir ]]; then dir=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-bench-partition.XXXXXX"); own_dir=1; fi
trap '[[ $own_dir == 1 ]] && rm -rf "$dir"' EXIT
nfiles=$((gib * 1024 * 1024 / kib))
threads=$(nproc)

# Half the files are random bytes (like JPEGs: incompressible), half are
# text-like records that compress about 3x, in 100 class directories.
if [[ ! -f $dir/src-complete ]]; then
  echo "bench: writing $nfiles files of $kib KiB into $dir/src" >&2
  /usr/bin/python3 - "$dir/src" "$nfiles" "$kib" <<'PY'
import os, random, sys
root, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(42)
size = kib * 1024
words = [b"%08x" % rng.getrandbits(32) for _ in range(4096)]
for i in range(n):
    d = os.path.join(root, "class_%03d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    if i % 2:
        data = rng.randbytes(size)
    else:
        data = b",".join(rng.choice(words) for _ in range(size // 9 + 1))[:size]
    with open(os.path.join(d, "sample_%07d.bin" % i), "wb") as f:
        f.write(data)
PY
  touch "$dir/src-complete"
fi
bytes=$(du -sb "$dir/src" | cut -f1)

cold=0
if [[ $(id -u) -eq 0 && -w /proc/sys/vm/drop_caches ]]; then cold=1; fi
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
run_tar() {
  local t0; t0=$(now)
  tar -cf - -C "$dir/src" . | zstd -T0 -3 -q -f -o "$dir/src.tar.zst"
  sync -f "$dir/src.tar.zst"
  calc "$(now) - $t0"
}
run_pack() {
  local t0; t0=$(now)
  "$BIN/clairfs-partition" pack "$dir/src" "$dir/out" --partitions 16 --compress zstd:3 \
    --force >/dev/null
  calc "$(now) - $t0"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A times
for mode in cold warm; do
  [[ $mode == cold && $cold == 0 ]] && { echo "bench: not root, cold runs skipped" >&2; continue; }
  tar_t=() pack_t=()
  for ((r = 0; r < runs; r++)); do
    [[ $mode == cold ]] && drop
    tar_t+=("$(run_tar)")
    [[ $mode == cold ]] && drop
    pack_t+=("$(run_pack)")
  done
  times[$mode,tar]=$(printf '%s\n' "${tar_t[@]}" | median)
  times[$mode,pack]=$(printf '%s\n' "${pack_t[@]}" | median)
  echo "bench: $mode tar|zstd ${tar_t[*]} s; clairfs-partition ${pack_t[*]} s" >&2
done
tar_size=$(stat -c %s "$dir/src.tar.zst")
pack_size=$(du -cb "$dir"/out/part-* | tail -1 | cut -f1)

mbs() { awk "BEGIN { printf \"%.0f\", $bytes / $1 / 1000000 }"; }
echo
echo "Data: $nfiles files of $kib KiB ($(calc "$bytes / 1073741824") GiB), half random, half text-like; $threads cores (zstd -T0: one thread per core; clairfs-partition: its default, two per core); 16 partitions; median of $runs runs."
echo
echo "| run | tar -cf - \| zstd -T0 -3 | clairfs-partition pack --compress zstd:3 | speed of pack / tar (target >= 1) |"
echo "| --- | --- | --- | --- |"
for mode in cold warm; do
  [[ -n ${times[$mode,tar]:-} ]] || continue
  t=${times[$mode,tar]} p=${times[$mode,pack]}
  printf '| %s | %.2f s, %s MB/s | %.2f s, %s MB/s | %.2fx |\n' "$mode" "$t" "$(mbs "$t")" \
    "$p" "$(mbs "$p")" "$(calc "$t / $p")"
done
printf '| output size | %s bytes (%.2fx) | %s bytes (%.2fx) | |\n' "$tar_size" \
  "$(calc "$bytes / $tar_size")" "$pack_size" "$(calc "$bytes / $pack_size")"
echo
"$BIN/clairfs-manifest-bench" --files 1000000 --dirs 1000 --dir "$dir"
