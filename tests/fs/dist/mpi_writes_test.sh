#!/usr/bin/env bash
# Files written on one node are read on the other over MPI (issue: writes
# through the mount, "visible on every node"). Two ranks, each with its own
# persist, so that nothing can reach the other node through persist: a file
# closed on node 0 shows on node 1 (name, size, bytes) once it settles; a
# checkpoint written to a temporary name and renamed over the last shows
# under its name only; an unlink and an rmdir show too; node 1's change to a
# file of node 0 makes it node 1's own copy, node 0 keeps its own; stats.json
# counts the reads each way.
set -uo pipefail
BIN=$CLAIRFS_BIN
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" mpi-writes
PY=/usr/bin/python3
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
# until_ok SECONDS CMD...: CMD succeeds within SECONDS (polled every 0.1 s).
until_ok() {
  local n=$(($1 * 10)) i
  shift
  for ((i = 0; i < n; i++)); do "$@" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
stat_of() {  # stat_of MOUNT MEMBER: writes.MEMBER of that node's stats.json
  "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["writes"][sys.argv[2]])' \
    "$1/.clairfs/stats.json" "$2"
}

mkdir -p "$T/data/d" && echo "x" >"$T/data/d/a"
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 2 >/dev/null || exit 1
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" \
  --writes-dir out --writes-local "$T/local{rank}" --writes-persist "$T/persist{rank}" \
  >"$T/daemons.log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { cat "$T/daemons.log"; exit 1; }
A=$T/mnt0/out B=$T/mnt1/out

# Looked up on node 1 before it exists: the answer must not stay cached.
[[ ! -e $B/ckpt/model.bin ]] || fail "node 1 shows a file nobody wrote"
mkdir "$A/ckpt"
head -c $((5 << 20)) /dev/urandom >"$T/model.bin"
cp "$T/model.bin" "$A/ckpt/model.bin"
if until_ok 10 cmp -s "$T/model.bin" "$B/ckpt/model.bin"; then
  pass "5 MiB written on node 0: the same bytes on node 1"
else
  fail "node 1 did not read node 0's file ($(ls -la "$B/ckpt" 2>&1 | tr '\n' ' '))"
fi
[[ ! -e $T/persist1/ckpt/model.bin ]] || fail "node 1's persist has node 0's file: the test proves nothing"

# A checkpoint written to a temporary name and renamed over the last.
head -c 300000 /dev/urandom >"$T/v2.bin"
cp "$T/v2.bin" "$A/ckpt/.tmp.v2" && mv "$A/ckpt/.tmp.v2" "$A/ckpt/model.bin"
if until_ok 10 cmp -s "$T/v2.bin" "$B/ckpt/model.bin" && [[ ! -e $B/ckpt/.tmp.v2 ]]; then
  pass "renamed over the last checkpoint on node 0: node 1 reads the new one"
else
  fail "node 1 did not follow the rename ($(ls -la "$B/ckpt" 2>&1 | tr '\n' ' '))"
fi

# Written on node 1, read on node 0.
echo "eval of epoch 1" >"$B/eval.txt"
until_ok 10 grep -qx "eval of epoch 1" "$A/eval.txt" && pass "node 1's file read on node 0" ||
  fail "node 0 did not read node 1's file"

# Node 1 appends to node 0's file: node 1's own copy from then on.
echo "node 1 was here" >>"$B/ckpt/model.bin"
cat "$T/v2.bin" <(echo "node 1 was here") >"$T/v2-b.bin"
cmp -s "$T/v2-b.bin" "$B/ckpt/model.bin" && cmp -s "$T/v2.bin" "$A/ckpt/model.bin" &&
  pass "changed on node 1: node 1 reads its copy, node 0 its own" ||
  fail "a change on node 1 of node 0's file read wrong"

# Removed on node 0: gone on node 1, except where node 1 has its own copy.
rm "$A/eval.txt" 2>/dev/null  # node 1's file, removed on node 0
rm "$A/ckpt/model.bin" && mkdir "$A/empty" && rmdir "$A/empty"
echo "last" >"$A/last.txt"
until_ok 10 grep -qx last "$B/last.txt" || fail "node 1 never saw last.txt"
grep -qx "eval of epoch 1" "$B/eval.txt" && pass "node 1's own file survives node 0's unlink of it" ||
  fail "node 0's unlink removed node 1's own eval.txt"
[[ ! -e $B/empty ]] && pass "a directory made and removed on node 0 is not on node 1" ||
  fail "node 1 still shows node 0's removed directory"
cmp -s "$T/v2-b.bin" "$B/ckpt/model.bin" && pass "node 1's own copy survives node 0's unlink" ||
  fail "node 0's unlink removed node 1's own copy"

reads1=$(stat_of "$T/mnt1" peer_reads) served0=$(stat_of "$T/mnt0" served_reads)
reads0=$(stat_of "$T/mnt0" peer_reads) rejected=$(stat_of "$T/mnt1" notices_rejected)
echo "node 1: peer_reads $reads1; node 0: served_reads $served0, peer_reads $reads0; rejected $rejected"
((reads1 > 0 && served0 > 0 && reads0 > 0 && rejected == 0)) && pass "stats.json counts the reads both ways" ||
  fail "stats.json: peer reads not counted"

kill -TERM "$launcher"
wait "$launcher" && launcher="" || { fail "the daemons did not stop cleanly"; tail -20 "$T/daemons.log"; }
((failures == 0)) || { tail -30 "$T/daemons.log"; exit 1; }
echo "PASS: files written on one node are read on the other"
