#!/usr/bin/env bash
# scripts/sim/plot.py on clairfs-sim's own CSVs: two runs (1 and 2 nodes) drawn
# as two PNGs; a missing or malformed CSV named with exit 1 and nothing drawn.
set -uo pipefail
BIN=${CLAIRFS_BIN:?CLAIRFS_BIN must point at the build bin directory}
SRC=${CLAIRFS_SRC:?CLAIRFS_SRC must point at the source tree}
PY=/usr/bin/python3  # Debian's, with python3-matplotlib (scripts/setup.sh)
PLOT=$SRC/scripts/sim/plot.py
if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
  # In CI setup.sh has installed it: a skip there is a failure.
  [[ ${CI:-} == true ]] && { echo "FAIL (CI must not skip): $PY has no matplotlib"; exit 1; }
  echo "SKIP: $PY has no matplotlib (scripts/setup.sh installs python3-matplotlib)"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-sim-plot.XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
is_png() { [[ -s $1 && $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; }

for n in 1 2; do
  cat >"$T/c$n.yaml" <<YAML
job: {nodes: $n, ranks_per_node: 2, epochs: 2, batch_size: 8, compute_seconds: 0.01}
dataset: {files: 400, file_size: 16K}
node: {ram: 4M}
YAML
  "$BIN/clairfs-sim" --config "$T/c$n.yaml" --csv "$T/r$n.csv" 2>/dev/null
  check "clairfs-sim at $n node(s) exits 0" test $? -eq 0
done
mkdir "$T/png"
"$PY" "$PLOT" "$T/r1.csv" "$T/r2.csv" "$T/png" >"$T/out" 2>"$T/err"
check "plot exits 0" test $? -eq 0
check "plot: the scaling curve is a PNG" is_png "$T/png/sim-scaling.png"
check "plot: the sources bar chart is a PNG" is_png "$T/png/sim-sources.png"
check "plot: says what it wrote" test "$(grep -c '^plot.py: wrote ' "$T/out")" -eq 2
check "plot: nothing on stderr" test ! -s "$T/err"

# fails NAME PATTERN CSV...: exit 1, PATTERN on stderr, no PNG written.
fails() {
  local name=$1 pattern=$2; shift 2
  rm -rf "$T/bad" && mkdir "$T/bad"
  "$PY" "$PLOT" "$@" "$T/bad" >/dev/null 2>"$T/bad.err"
  local rc=$?
  check "$name: exit 1" test $rc -eq 1
  check "$name: says so" grep -qE "$pattern" "$T/bad.err"
  check "$name: no PNG" test -z "$(ls "$T/bad")"
}
fails "a missing CSV" "^plot.py: cannot read $T/none.csv: No such file" "$T/r1.csv" "$T/none.csv"
: >"$T/empty.csv"
fails "an empty CSV" "empty.csv: empty, not a clairfs-sim CSV" "$T/empty.csv"
head -1 "$T/r1.csv" >"$T/header.csv"
fails "a header and no rows" "header.csv: a header and no rows" "$T/header.csv"
cut -d, -f1-11 "$T/r1.csv" >"$T/old.csv"
fails "a CSV without the nodes column" "old.csv: not a clairfs-sim CSV \(no column nodes" "$T/old.csv"
sed '3s/^\([^,]*\),\([^,]*\),[^,]*,/\1,\2,fast,/' "$T/r1.csv" >"$T/word.csv"
fails "a word for a number" "word.csv line 3: bad seconds 'fast'" "$T/word.csv"
sed '4s/,[^,]*$//' "$T/r1.csv" >"$T/short.csv"
fails "a short row" "short.csv line 4: [0-9]+ fields, the header has [0-9]+" "$T/short.csv"
fails "the same run twice" "r1.csv line 2: shared-fs on 1 node\(s\), epoch 0, already in .*r1.csv line 2" \
  "$T/r1.csv" "$T/r1.csv"

"$PY" "$PLOT" "$T/r1.csv" >/dev/null 2>&1
check "no output directory: exit 2" test $? -eq 2
"$PY" "$PLOT" "$T/r1.csv" "$T/nowhere" >/dev/null 2>"$T/usage.err"
check "a missing output directory: exit 2" test $? -eq 2
check "a missing output directory: named" grep -q "$T/nowhere is not a directory" "$T/usage.err"

((failures == 0)) && echo "sim_plot_test: all passed" || echo "sim_plot_test: $failures failed"
exit $((failures > 0))
