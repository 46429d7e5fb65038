#!/usr/bin/env bash
# Files homed where they are read: two clairfsd ranks, a dataset packed into
# 4 contiguous partitions, and an order file in which each training rank
# reads its own contiguous half every epoch (as DLIO's PyTorch reader does).
# By p mod 2 each rank would find half of its files on the other node; placed
# by reader, each rank stages the partitions it reads and its first epoch
# reads nothing from its peer. Every byte still right (cmp).
set -uo pipefail
BIN=$CLAIRFS_BIN
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" placement
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

$PY - "$T/src" <<'PY' || exit 1
import os, random, sys
root = sys.argv[1]
rng = random.Random(5)
os.makedirs(os.path.join(root, "train"))
for i in range(64):
    with open(os.path.join(root, "train", "img_%03d.npz" % i), "wb") as f:
        f.write(rng.randbytes(40000))  # equal sizes: the 4 partitions split at 16 files
PY
"$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 4 --placement contiguous >/dev/null 2>&1 \
  || { fail "pack"; exit 1; }
( cd "$T/src" && find train -type f | sort ) >"$T/files"
{ echo "# clairfs-order v1"; echo "# world-size 2"
  for e in 0 1; do
    echo "# epoch $e rank 0"; head -n 32 "$T/files"
    echo "# epoch $e rank 1"; tail -n 32 "$T/files"
  done
} >"$T/order"

run() {  # run PLACED(yes|no): 2 ranks, each reads its half once through its own mount
  rm -rf "$T"/ssd* "$T"/mnt*; mkdir -p "$T"/mnt{0,1}
  local sampler=(--prefetch-sampler order-file --prefetch-order-file "$T/order" --prefetch-world-size 2)
  [[ $1 == no ]] && sampler=()
  "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/out" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
    --report false "${sampler[@]}" >"$T/log-$1" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T"/mnt{0,1} --timeout 60 --quiet || { fail "mounts not ready"; cat "$T/log-$1"; exit 1; }
  local r
  for r in 0 1; do
    { [[ $r == 0 ]] && head -n 32 "$T/files" || tail -n 32 "$T/files"; } | while read -r f; do
      cmp -s "$T/src/$f" "$T/mnt$r/$f" || echo "$f differs on rank $r"
    done >"$T/cmp-$1-$r"
    [[ -s $T/cmp-$1-$r ]] && { fail "rank $r read wrong bytes ($1)"; head -3 "$T/cmp-$1-$r"; }
    cat "$T/mnt$r/.clairfs/stats.json" >"$T/stats-$1-$r.json"
  done
  kill -TERM "$launcher"; wait "$launcher" || fail "clairfsd ranks did not exit cleanly ($1)"; launcher=""
}
run no
run yes
grep -q "placement: 2 of 4 partitions homed on the rank that reads them first" "$T/log-yes" \
  && pass "rank 0 logged the placement" || { fail "no placement line"; grep placement "$T/log-yes"; }
$PY - "$T" <<'PY' && pass "placed by reader: no peer reads in the first epoch (p mod 2: half of them)" \
  || fail "placement by reader"
import json, sys
t = sys.argv[1]
ok = True
for r in (0, 1):
    plain = json.load(open("%s/stats-no-%d.json" % (t, r)))["cluster"]
    placed = json.load(open("%s/stats-yes-%d.json" % (t, r)))["cluster"]
    pl = placed["placement"]
    print("rank %d: peer reads %d by p mod 2, %d placed; placement %s"
          % (r, plain["peers"]["reads"], placed["peers"]["reads"], pl))
    ok &= not plain["placement"]["by_reader"] and plain["peers"]["reads"] > 0
    ok &= pl["by_reader"] and pl["moved"] == 2 and pl["first_epoch_peer_bytes"] == 0
    ok &= pl["default_first_epoch_peer_bytes"] > 0 and placed["peers"]["reads"] == 0
sys.exit(0 if ok else 1)
PY
# Staging in the job's first-use order: with the order known, the bytes the
# rank's job reads (its 32 files) came first, by staging or by the job's own
# reads before staging got there; without it, none.
$PY - "$T" <<'PY' && pass "staged in the job's first-use order (no order: in pack order)" \
  || fail "first-use order"
import json, sys
t = sys.argv[1]
ok = True
for r in (0, 1):
    plain = json.load(open("%s/stats-no-%d.json" % (t, r)))["cluster"]["staging"]
    placed = json.load(open("%s/stats-yes-%d.json" % (t, r)))["cluster"]["staging"]
    print("rank %d: first_use_units %d / %d, bytes_first_use %d + bytes_kept %d"
          % (r, plain["first_use_units"], placed["first_use_units"], placed["bytes_first_use"],
             placed["bytes_kept"]))
    ok &= plain["first_use_units"] == 0 and plain["bytes_first_use"] == 0
    ok &= placed["first_use_units"] > 0
    ok &= placed["bytes_first_use"] + placed["bytes_kept"] >= 32 * 40000
sys.exit(0 if ok else 1)
PY
((failures == 0)) && echo "PASS: placement by reader" || { echo "FAILED: $failures"; exit 1; }
