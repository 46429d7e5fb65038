#!/usr/bin/env bash
# Runs the benchmark suite and collects its results, each with the command that
# produced it, into docs/benchmarks-latest.md, plus a plot of the end-to-end
# epoch times (docs/img/epoch-times.png). docs/benchmarks.md holds the analysed
# results; this file is the raw output of the latest full run.
#
# usage: scripts/bench/run-all.sh [--with-fuse]   (--with-fuse adds scripts/bench/fuse.sh:
#        about 9 GB of generated trees and the longest run of the suite)
# Needs root for the cold runs and the throttled stand-in (benchmarks skip what they cannot do).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
with_fuse=0
[[ ${1:-} == --with-fuse ]] && with_fuse=1
scripts/setup.sh >/dev/null
# The plot needs matplotlib (not needed by the tests, so not in setup.sh).
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null && [[ $(id -u) -eq 0 ]]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-matplotlib >/dev/null
fi
out=docs/benchmarks-latest.md
raw=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-run-all.XXXXXX")
trap 'rm -rf "$raw"' EXIT

run() {  # run TITLE COMMAND...: runs one benchmark, appends its output under TITLE
  local title=$1; shift
  echo "run-all: $title: $*" >&2
  local t0=$SECONDS
  {
    printf '\n## %s\n\n```sh\n%s\n```\n\n' "$title" "$*"
    if "$@" 2>"$raw/stderr"; then :; else
      printf '(exit status %s; last lines of its stderr:)\n\n```\n%s\n```\n' "$?" "$(tail -5 "$raw/stderr")"
    fi
    printf '\n(%d s)\n' $((SECONDS - t0))
  } >>"$out.tmp"
}

{
  echo "# Benchmarks: latest full run"
  echo
  echo "Written by \`scripts/bench/run-all.sh\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD),"
  echo "$(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Analysis and targets: [benchmarks.md](benchmarks.md)."
} >"$out.tmp"
run "Partitioning" scripts/bench/partition.sh
run "Multi-node, 128 KiB files" scripts/bench/dist.sh --files 4000 --kib 128
run "Multi-node, 16 KiB files" scripts/bench/dist.sh --files 8000 --kib 16
run "Prefetch" env BENCH_DIR="$raw/prefetch" scripts/bench/prefetch.sh
run "End to end: the training script, 500 IOPS" scripts/bench/train.sh --per-class 512 --epochs 4 \
  --iops 500 --rounds 3 --json "$raw/train-500.json"
run "End to end: the training script, 200 IOPS" scripts/bench/train.sh --per-class 512 --epochs 4 \
  --iops 200 --rounds 3 --json "$raw/train-200.json"
run "End to end: a Horovod + Keras job, pattern B" scripts/bench/keras.sh --pattern B --per-class 128 \
  --epochs 3 --iops 200 --json "$raw/keras-b.json"
run "End to end: a Horovod + Keras job, pattern A" scripts/bench/keras.sh --pattern A --per-class 128 \
  --epochs 3 --iops 200 --json "$raw/keras-a.json"
run "What an open costs a Python process" scripts/bench/open_cost.sh
((with_fuse)) && run "Single-node mount" env BENCH_DIR="$raw/fuse" scripts/bench/fuse.sh
mv "$out.tmp" "$out"

plots=()
for f in "$raw/train-500.json" "$raw/train-200.json" "$raw/keras-b.json" "$raw/keras-a.json"; do
  # Kept beside the plot, so it can be redrawn (plot.py) without rerunning the suite.
  [[ -f $f ]] && mkdir -p docs/img && cp "$f" "docs/img/$(basename "$f")" && plots+=("docs/img/$(basename "$f")")
done
if ((${#plots[@]})); then
  mkdir -p docs/img
  if /usr/bin/python3 scripts/bench/plot.py "${plots[@]}" docs/img/epoch-times.png; then
    printf '\n![epoch times](img/epoch-times.png)\n' >>"$out"
  fi
fi
echo "run-all: wrote $out" >&2
