#!/usr/bin/env bash
# Regenerates the committed seed corpus, tests/fuzz/corpus/<target>/, from two
# tiny datasets packed by clairfs-partition (one compressed with small frames
# and a broadcast file, one stored raw). Run once when a format or message
# changes; scripts/fuzz.sh only reads the corpus. Needs the fuzz build
# (scripts/fuzz.sh builds it; FUZZ_BUILD_DIR, default build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${FUZZ_BUILD_DIR:-build-fuzz}
cmake --build "$build" -j2 --target clairfs-partition fuzz_seeds >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src
mkdir -p "$src/a" "$src/b/c" "$src/d"
seq 1 400 | sed "s/^/sample line /" >"$src/a/labels.txt"   # framed, zstd frames
seq 1 300 >"$src/a/ids.txt"                                 # zstd
head -c 700 /dev/urandom >"$src/a/rand.bin"                 # raw: does not compress
{ seq 1 700; head -c 3000 /dev/urandom; seq 1 300; } >"$src/b/c/big.bin"  # framed
: >"$src/d/empty"
echo "tiny clairfs dataset for the fuzz seeds" >"$src/README"

export ASAN_OPTIONS=detect_leaks=0
"$build/bin/clairfs-partition" pack "$src" "$tmp/packed" --partitions 2 --frame-size 4096 \
  --broadcast README >/dev/null
"$build/bin/clairfs-partition" pack "$src" "$tmp/raw" --partitions 1 --compress none >/dev/null

rm -rf tests/fuzz/corpus
"$build/fuzz/fuzz_seeds" tests/fuzz/corpus "$tmp/packed" "$tmp/raw"
du -sh --apparent-size tests/fuzz/corpus/*
