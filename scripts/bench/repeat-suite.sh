#!/usr/bin/env bash
# Is the test suite reliable? Runs `scripts/test.sh` (the README's test
# command) on a fresh clone of this repository RUNS times in a row while
# another process keeps one core busy, and prints one line per run (exit code,
# minutes, the tests that failed). Logs of failed runs are kept.
#
# usage: scripts/bench/repeat-suite.sh [--runs N] [--no-hog] [--keep] [-- ctest args]
#   --runs N   how many runs (default 10); all of them run, even after a failure
#   --no-hog   without the busy process
#   --keep     keep the clone and every log (default: only failed runs' logs)
# Environment: CLAIRFS_VENVS (default: the clone's own .venvs, created by the
# first run; point it at an existing set to save the ~10 minute install).
# Exit status: 0 when every run passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=10 hog=1 keep=0
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --no-hog) hog=0; shift ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    *) echo "repeat-suite: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "repeat-suite: --runs takes a positive number" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-repeat.XXXXXX")
git clone -q . "$work/repo"
echo "repeat-suite: $runs runs of scripts/test.sh on a clone of $(git rev-parse --short HEAD) in $work/repo" \
  "$( ((hog)) && echo "with one core kept busy" || echo "without load")"
hog_pid=""
if ((hog)); then
  # One busy process at the lowest priority the tests would not give it: the
  # same as theirs, so it takes a core's share from them.
  sh -c 'while :; do :; done' &
  hog_pid=$!
fi
finish() {
  [[ -n $hog_pid ]] && kill "$hog_pid" 2>/dev/null
  if ((keep)); then echo "repeat-suite: kept $work"; else rm -rf "$work/repo"; fi
}
trap finish EXIT

passed=0
for ((i = 1; i <= runs; i++)); do
  log=$work/run$i.log
  t0=$(date +%s)
  rc=0
  (cd "$work/repo" && CI=true scripts/test.sh "$@" </dev/null >"$log" 2>&1) || rc=$?
  mins=$(awk -v s=$(($(date +%s) - t0)) 'BEGIN { printf "%.1f", s / 60 }')
  failed=$(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*)$/\1/p' "$log" | tr '\n' ' ')
  if ((rc == 0)); then
    passed=$((passed + 1))
    echo "run $i: passed in $mins min"
    ((keep)) || rm -f "$log"
  else
    echo "run $i: FAILED (exit $rc) in $mins min: ${failed:-see the log}; log $log"
  fi
done
echo "repeat-suite: $passed of $runs runs passed"
((passed == runs))
