#!/usr/bin/env bash
# Checkpoints through the writable area with the real libraries (issue: writes
# through the mount). A 2-rank job (mpiexec, one persist, a local dir each):
# each kind of checkpoint of tests/e2e/checkpoints.py - torch.save through a
# temporary file renamed over the last, safetensors, an h5py file updated in
# place at random offsets, Keras 3 ModelCheckpoint (.keras) and Keras 2
# ModelCheckpoint (.h5) - is saved through node 0's mount, loaded through
# node 1's once drained, and gives the same values; after the stop, every
# file in persist is byte-identical to what node 0's mount showed; a new
# daemon on persist alone (a restart on other nodes) loads them again.
# A missing venv skips (77), or fails when CI=true.
set -uo pipefail
BIN=$CLAIRFS_BIN
source "$CLAIRFS_SRC/tests/tf/venvs_lib.sh" tf-current tf-keras2
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" writes-e2e
PY=/usr/bin/python3
CKPT=$CLAIRFS_SRC/tests/e2e/checkpoints.py
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
python_for() {  # the Python that has the library
  case $1 in
    torch) echo "$PY" ;;
    keras-h5) echo "$VENVS/tf-keras2/bin/python" ;;
    *) echo "$VENVS/tf-current/bin/python" ;;
  esac
}
KINDS=(torch safetensors h5py keras keras-h5)

mkdir -p "$T/data/d" && echo "x" >"$T/data/d/a"
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 2 >/dev/null || exit 1
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" \
  --writes-dir outputs --writes-local "$T/local{rank}" --writes-persist "$T/persist" \
  >"$T/daemons.log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { cat "$T/daemons.log"; exit 1; }

for k in "${KINDS[@]}"; do
  "$(python_for "$k")" "$CKPT" "$k" save "$T/mnt0/outputs/$k" >"$T/$k.saved" 2>"$T/$k.save.log" ||
    { fail "$k: saving through the mount"; tail -5 "$T/$k.save.log"; }
done
# Drained: nothing queued or settling on node 0.
for i in $(seq 1 300); do
  [[ $($PY -c 'import json, sys; w = json.load(open(sys.argv[1]))["writes"]; print(w["steps_pending"] + w["files_unsettled"])' \
    "$T/mnt0/.clairfs/stats.json") == 0 ]] && break
  sleep 0.1
done
for k in "${KINDS[@]}"; do
  "$(python_for "$k")" "$CKPT" "$k" load "$T/mnt1/outputs/$k" >"$T/$k.loaded" 2>"$T/$k.load.log" ||
    { fail "$k: loading through the other node's mount"; tail -5 "$T/$k.load.log"; continue; }
  if [[ -s $T/$k.saved ]] && cmp -s "$T/$k.saved" "$T/$k.loaded"; then
    pass "$k: saved on node 0, loaded on node 1: the same values"
  else
    fail "$k: node 1 loaded other values ($(cat "$T/$k.saved") vs $(cat "$T/$k.loaded"))"
  fi
done
(cd "$T/mnt0/outputs" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$T/mount.sums"
cp "$T/mnt0/.clairfs/stats.json" "$T/stats0.json"
kill -TERM "$launcher"
wait "$launcher" && launcher="" || { fail "the daemons did not stop cleanly"; tail -20 "$T/daemons.log"; }
(cd "$T/persist" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$T/persist.sums"
if [[ $(wc -l <"$T/mount.sums") -ge ${#KINDS[@]} ]] && cmp -s "$T/mount.sums" "$T/persist.sums"; then
  pass "persist after the stop: the $(wc -l <"$T/mount.sums") files node 0's mount showed, byte for byte"
else
  fail "persist differs from node 0's mount:"
  diff "$T/mount.sums" "$T/persist.sums"
fi
# Every byte in persist came through node 0's drain (a file rewritten in place
# may have been copied more than once).
$PY -c 'import json, sys; w = json.load(open(sys.argv[1]))["writes"]; size = int(sys.argv[2])
assert w["bytes_written"] >= size and w["bytes_drained"] >= size and w["failing"] == "", (w, size)' \
  "$T/stats0.json" "$(find "$T/persist" -type f -printf "%s\n" | awk "{ s += \$1 } END { print s }")" || fail "node 0's stats do not show its writes drained"

# A restart elsewhere: persist only.
"$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt-restart" --writes-dir outputs \
  --writes-local "$T/local-restart" --writes-persist "$T/persist" >"$T/restart.log" 2>&1 &
restart=$!
"$BIN/clairfs-wait" "$T/mnt-restart" --timeout 60 --quiet || { cat "$T/restart.log"; exit 1; }
for k in "${KINDS[@]}"; do
  "$(python_for "$k")" "$CKPT" "$k" load "$T/mnt-restart/outputs/$k" >"$T/$k.restart" 2>>"$T/$k.load.log"
  cmp -s "$T/$k.saved" "$T/$k.restart" && pass "$k: loaded again after a restart" ||
    fail "$k: after a restart, other values"
done
fusermount3 -u "$T/mnt-restart"
wait "$restart" || fail "the restarted daemon exited non-zero"
((failures == 0)) && echo "PASS" || { echo "$failures failure(s)"; exit 1; }
