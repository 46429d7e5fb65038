#!/usr/bin/env bash
# clairfs-sim from the command line: the default job's rows, a config's
# rows to a CSV file, every problem of a bad config named with exit 1, bad
# usage exit 2.
set -uo pipefail
BIN=${CLAIRFS_BIN:?CLAIRFS_BIN must point at the build bin directory}
T=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-sim.XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

"$BIN/clairfs-sim" >"$T/default.csv" 2>"$T/default.err"
check "default run exits 0" test $? -eq 0
check "default run: a header and one row per policy" test "$(wc -l <"$T/default.csv")" -eq 5
check "default run: shared-fs row" grep -q '^shared-fs,0,' "$T/default.csv"
check "default run: fanstore row" grep -q '^fanstore,0,' "$T/default.csv"
check "default run: nopfs row" grep -q '^nopfs,0,' "$T/default.csv"
check "default run: clairfs row" grep -q '^clairfs,0,' "$T/default.csv"
check "default run: the header names the prefetch columns" \
  grep -q ',prefetches,prefetch_local_bytes,prefetch_peer_bytes,prefetch_shared_fs_bytes,' "$T/default.csv"
check "default run: every row has as many fields as the header" \
  test "$(awk -F, '{print NF}' "$T/default.csv" | sort -u)" = "$(head -1 "$T/default.csv" | awk -F, '{print NF}')"
check "default run: clairfs prefetched something" \
  awk -F, '$1 == "clairfs" && $12 > 0 {found = 1} END {exit !found}' "$T/default.csv"
check "default run: shared-fs prefetched nothing" \
  awk -F, '$1 == "shared-fs" && $12 != 0 {bad = 1} END {exit bad}' "$T/default.csv"
check "a progress line per policy and one per epoch" test "$(grep -c "^clairfs-sim: " "$T/default.err")" -eq 8

cat >"$T/c.yaml" <<'YAML'
job: {nodes: 2, ranks_per_node: 2, epochs: 3, batch_size: 8}
dataset: {files: 500, file_size: 32K}
policies: [fanstore]
YAML
"$BIN/clairfs-sim" --config "$T/c.yaml" --csv "$T/out.csv" >"$T/stdout" 2>/dev/null
check "config run exits 0" test $? -eq 0
check "config run: nothing on stdout" test ! -s "$T/stdout"
check "config run: 3 epochs of fanstore" test "$(grep -c '^fanstore,' "$T/out.csv")" -eq 3
check "config run: the header ends in the job's shape" grep -q ',nodes,ranks_per_node$' "$T/out.csv"
check "config run: every row says 2 nodes x 2 ranks" \
  test "$(tail -n +2 "$T/out.csv" | awk -F, '{print $(NF-1) "x" $NF}' | sort -u)" = 2x2

# A sweep: one invocation, rows for each node count, a progress line per run.
"$BIN/clairfs-sim" --config "$T/c.yaml" --nodes 1,3,2 --csv "$T/sweep.csv" 2>"$T/sweep.err"
check "sweep exits 0" test $? -eq 0
check "sweep: 3 epochs at each of 1, 3, 2 nodes, in that order" \
  test "$(tail -n +2 "$T/sweep.csv" | awk -F, '{print $(NF-1)}' | uniq | tr '\n' ' ')" = "1 3 2 "
check "sweep: 9 rows" test "$(tail -n +2 "$T/sweep.csv" | wc -l)" -eq 9
check "sweep: a progress line per run" \
  test "$(grep -c '^clairfs-sim: run [1-3] of 3: [1-3] nodes\? ' "$T/sweep.err")" -eq 3
check "sweep: one node is \"1 node\"" grep -q '^clairfs-sim: run 1 of 3: 1 node (' "$T/sweep.err"
check "sweep: the one-node run's policy line" grep -q '^clairfs-sim: fanstore: 1 node x 2 ranks, 500 files, 3 epochs\.\.\.$' "$T/sweep.err"
check "sweep: the policies' lines name the run's nodes" grep -q '^clairfs-sim: fanstore: 3 nodes x 2 ranks' "$T/sweep.err"
for bad in "" 0 1,,2 1,1 x; do
  "$BIN/clairfs-sim" --config "$T/c.yaml" --nodes "$bad" >/dev/null 2>"$T/badnodes.err"
  check "--nodes '$bad' exits 2" test $? -eq 2
  check "--nodes '$bad' is named" grep -q '^clairfs-sim: --nodes: node counts: ' "$T/badnodes.err"
done

printf 'job: {nodes: -1}\npolicies: [nope]\n' >"$T/bad.yaml"
"$BIN/clairfs-sim" --config "$T/bad.yaml" >/dev/null 2>"$T/bad.err"
check "bad config exits 1" test $? -eq 1
check "bad config: the node count named" grep -q "job.nodes: bad value '-1'" "$T/bad.err"
check "bad config: the policy named" grep -q "unknown policy 'nope'" "$T/bad.err"
"$BIN/clairfs-sim" --frobnicate >/dev/null 2>&1
check "bad usage exits 2" test $? -eq 2
"$BIN/clairfs-sim" --help | grep -q '^usage: clairfs-sim'
check "--help prints the usage" test $? -eq 0

((failures == 0)) && echo "sim_cli_test: all passed" || echo "sim_cli_test: $failures failed"
exit $((failures > 0))
