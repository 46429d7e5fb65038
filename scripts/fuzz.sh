#!/usr/bin/env bash
# scripts/fuzz.sh [--seconds N] [TARGET...]: builds the libFuzzer targets of
# tests/fuzz with clang (ASan + UBSan) into build-fuzz, replays the inputs that
# once broke each target (tests/fuzz/regressions/TARGET/), then fuzzes each
# target for N seconds (default 30; 0: build and replay only) starting from its
# seed corpus (tests/fuzz/corpus/TARGET/). New inputs go to a temporary
# directory, so the committed corpus never grows. Prints executions and
# coverage per target.
#
# Targets: manifest payload protocol config report (default: all, one after the other).
# A crash, leak, timeout or invariant violation fails the run; its input is kept
# in build-fuzz/crashes/TARGET/ and the command that reproduces it is printed.
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_NICE (a nice level
# for the fuzzing, default 0). clang comes from scripts/setup.sh's packages.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=30
if [[ ${1:-} == --seconds ]]; then
  [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds takes a number" >&2; exit 2; }
  seconds=$2
  shift 2
fi
all=(manifest payload protocol config report)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (${all[*]})" >&2; exit 2; }
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ missing (scripts/setup.sh installs it)" >&2; exit 2; }

build=${FUZZ_BUILD_DIR:-build-fuzz}
mpi_args=()
if command -v mpicxx.mpich >/dev/null; then
  mpi_args=(-DMPI_CXX_COMPILER="$(command -v mpicxx.mpich)" -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)")
fi
start=$SECONDS
CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLAIRFS_FUZZ=ON \
  "${mpi_args[@]}" >/dev/null
cmake --build "$build" -j2 --target "${targets[@]/%/_fuzz}" >/dev/null
echo "fuzz.sh: built ${targets[*]} in $((SECONDS - start)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
  bin=$build/fuzz/${t}_fuzz
  crashes=$build/crashes/$t
  mkdir -p "$crashes" "$work/$t"
  log=$work/$t.log
  regressions=(tests/fuzz/regressions/"$t"/*)
  if [[ -e ${regressions[0]} ]] && ! "$bin" "${regressions[@]}" >"$log" 2>&1; then
    tail -n 30 "$log"
    echo "fuzz.sh: $t: a regression input fails again; reproduce: $bin ${regressions[*]}"
    failed+=("$t")
    continue
  fi
  ((seconds > 0)) || continue
  rc=0
  nice -n "${FUZZ_NICE:-0}" "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$crashes/" "$work/$t" "tests/fuzz/corpus/$t" \
    >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
  if ((rc == 0)); then
    echo "fuzz.sh: $t: ${execs:-?} executions in $seconds s, cov ${cov:-?}, ft ${ft:-?}," \
      "corpus ${corp:-?} (inputs/bytes), 0 crashes"
  else
    tail -n 40 "$log"
    input=$(ls -t "$crashes" | head -n 1)
    echo "fuzz.sh: $t: FAILED after ${execs:-?} executions; input kept in $crashes/$input"
    echo "fuzz.sh: reproduce: $bin $crashes/$input"
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, 0 crashes in $((SECONDS - start)) s"
