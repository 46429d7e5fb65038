#!/usr/bin/env bash
# Four clairfsd ranks on this host behave as four nodes: every mount shows the
# whole dataset byte for byte, reads cross ranks, a rank killed mid-read is
# survived with two replicas, and a missing pack is a clear error.
set -uo pipefail
BIN=$CLAIRFS_BIN
RANK=$CLAIRFS_SRC/tests/fs/dist/rank.sh  # see there: keeps survivors alive under hydra
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" mpi
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

$PY "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$T/src" --small 1500 --no-links || exit 1

# start REPLICAS: packs with K replicas and launches 4 ranks.
start() {
  local k=$1
  rm -rf "$T/out" "$T"/ssd* "$T"/log*; mkdir -p "$T"/mnt{0,1,2,3}
  "$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 8 --replicas "$k" --frame-size 65536 >/dev/null 2>&1 \
    || { fail "pack"; exit 1; }
  "$MPIEXEC" -disable-auto-cleanup -n 4 "$RANK" "$BIN/clairfsd" --dataset "$T/out" \
    --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --peer-timeout-ms 1000 \
    --shutdown-wait-ms 3000 >"$T/log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet || { fail "mounts not ready"; cat "$T/log"; exit 1; }
}
stop() {
  kill -TERM "$launcher"; wait "$launcher"; local rc=$?; launcher=""
  return $rc
}
stats() { cat "$1/.clairfs/stats.json"; }
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# --- replicas 1: every mount identical, reads crossed ranks, staging laid out by ownership.
start 1
for r in 0 1 2 3; do
  diff -r "$T/src" "$T/mnt$r" >"$T/diff$r" 2>&1 && pass "rank $r mount identical (diff -r)" \
    || { fail "rank $r differs"; head "$T/diff$r"; }
done
for r in 0 1 2 3; do
  stats "$T/mnt$r" >"$T/stats$r.json"
  peers=$(json "$T/stats$r.json" 'd["cluster"]["peers"]["reads"]')
  served=$(json "$T/stats$r.json" 'd["cluster"]["served_to_peers"]["reads"]')
  [[ $peers -gt 0 && $served -gt 0 ]] && pass "rank $r read $peers times from peers, served $served" \
    || fail "rank $r peers=$peers served=$served"
done
# diff -r read the large framed files of other ranks frame after frame: their
# next frames were asked for ahead and taken by the reads (the bytes checked
# by diff -r above), none failed.
$PY - "$T"/stats{0,1,2,3}.json <<'PY' && pass "peers' large files read with frames asked for ahead" || fail "frames ahead"
import json, sys
peers = [json.load(open(p))["cluster"]["peers"] for p in sys.argv[1:]]
taken = sum(p["ahead_taken"] for p in peers)
print("  frames asked ahead %d, taken %d, dropped %d, failed %d"
      % (sum(p["ahead_reads"] for p in peers), taken, sum(p["ahead_dropped"] for p in peers),
         sum(p["ahead_failed"] for p in peers)))
sys.exit(0 if taken > 0 and all(p["ahead_failed"] == 0 and p["ahead_taken"] <= p["reads"] for p in peers) else 1)
PY
sleep 1  # staging is small; let it finish
for r in 0 1 2 3; do
  want="part-0000$r part-0000$((r + 4)) part-bcast"
  got=$(cd "$T/ssd$r" && ls part-* | tr '\n' ' ' | sed 's/ $//')
  [[ $got == "$want" ]] && pass "rank $r staged exactly its packs" || fail "rank $r staged '$got', want '$want'"
done
# What each rank read from the dataset directory: its share once, by staging or
# by the reads before it (kept for staging: one stream per pack); the shares
# cover the dataset; the counts add up (staged + direct = distinct + reread).
for r in 0 1 2 3; do stats "$T/mnt$r" >"$T/stats$r.json"; done
$PY - "$T"/stats{0,1,2,3}.json <<'PY' && pass "the dataset directory's bytes: each rank read its share once, the shares cover the dataset" || fail "source counters"
import json, sys
shares = 0
for path in sys.argv[1:]:
    c = json.load(open(path))["cluster"]
    s, kept = c["source"], c["staging"]["bytes_kept"]
    # A read and staging may fetch one range at the same moment: both count.
    ok = s["staged_bytes"] <= s["share_bytes"] <= s["staged_bytes"] + kept and \
        s["staged_bytes"] + s["direct_bytes"] == s["distinct_bytes"] + s["reread_bytes"] and \
        s["distinct_bytes"] <= s["dataset_bytes"] and s["reread_bytes"] * 20 <= s["share_bytes"]
    print("%s: %s, kept %d" % (path, s, kept))
    if not ok:
        sys.exit(1)
    shares += s["share_bytes"]
# every rank holds part-bcast too: the shares cover the dataset, and more
total = json.load(open(sys.argv[1]))["cluster"]["source"]["dataset_bytes"]
sys.exit(0 if shares > total else 1)
PY
stop && pass "SIGTERM to mpiexec: clean exit" || fail "exit code after SIGTERM"
grep -q "$T/mnt" /proc/mounts && fail "mounts left behind" || pass "no mount left behind"

# --- replicas 2: kill a rank mid-read; the other mounts still return correct bytes.
start 2
( cd "$T/src" && find . -type f | sort ) >"$T/files"
head -n 300 "$T/files" | while read -r f; do cat "$T/mnt1/$f" >/dev/null; done
pid2=$(json "$T/mnt2/.clairfs/stats.json" 'd["cluster"]["pid"]')
kill -KILL "$pid2" && pass "killed rank 2 (pid $pid2) mid-read"
for r in 0 1 3; do
  diff -r "$T/src" "$T/mnt$r" >"$T/diff$r" 2>&1 && pass "rank $r still identical after rank 2 died" \
    || { fail "rank $r after kill"; head "$T/diff$r"; }
done
stats "$T/mnt0" >"$T/after.json"
fb=$(json "$T/after.json" 'd["cluster"]["fallback"]["reads"]')
[[ $fb -eq 0 ]] && pass "replicas answered; no read needed the shared packs" || echo "note: $fb fallback reads"
stop; rc=$?
[[ $rc -ne 0 ]] && pass "job exit code reports the dead rank ($rc)" || fail "exit code 0 despite a dead rank"

# --- a missing pack on OUT is a clear error naming it, and the rest is still served.
rm -rf "$T/out" "$T"/ssd*; mkdir -p "$T"/mnt{0,1,2,3}
"$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 8 >/dev/null 2>&1
rm "$T/out/part-00003"
"$MPIEXEC" -disable-auto-cleanup -n 4 "$RANK" "$BIN/clairfsd" --dataset "$T/out" \
  --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --shutdown-wait-ms 3000 >"$T/log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet
diff -r "$T/src" "$T/mnt0" >"$T/diffm" 2>&1
# mpiexec forwards the ranks' lines asynchronously: give it time on a busy machine.
for i in $(seq 1 300); do grep -q "part-00003.*missing\|missing.*part-00003" "$T/log" && break; sleep 0.1; done
grep -q "part-00003" "$T/log" && grep -qi "missing" "$T/log" && pass "missing pack named in the log" \
  || { fail "missing pack not named"; cat "$T/log"; }
grep -q "Input/output error" "$T/diffm" && pass "its files read as EIO, not bytes" || fail "no EIO for the missing pack"
[[ $(grep -c "Input/output error" "$T/diffm") -lt $(wc -l <"$T/files") ]] && pass "other files still served" \
  || fail "everything failed"
stop

echo "$failures failures"
[[ $failures -eq 0 ]]
