#!/usr/bin/env bash
# Four clairfsd ranks start and stop as one job, whatever a rank does:
# - SIGTERM sent twice to every rank (as hydra's proxy and a forwarding
#   wrapper do) still ends in a clean, bounded shutdown: exit 0, no mount and
#   no daemon left (a second SIGTERM used to kill a rank unfinalized and leave
#   the others in MPI_Finalize forever);
# - one rank that cannot start (its mount path is a regular file, its mount
#   point is not empty) stops every rank at once with the reason in the log,
#   instead of leaving the others waiting in the manifest broadcast;
# - a mount point already in use is refused, not stacked on;
# - the dead mount of a killed daemon whose auto-unmount helper did not
#   unmount it (the helper races the connection's end, or was killed with the
#   daemon) is detached by the next daemon there, which then mounts.
set -uo pipefail
BIN=$CLAIRFS_BIN
RANK=$CLAIRFS_SRC/tests/fs/dist/rank.sh
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" lifecycle
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

$PY "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$T/src" --small 200 --no-links || exit 1
"$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 8 >/dev/null 2>&1 || { fail "pack"; exit 1; }

# launch: starts 4 ranks in the background (extra arguments go to clairfsd).
launch() {
  rm -rf "$T"/ssd* "$T/log"
  "$MPIEXEC" -disable-auto-cleanup -n 4 "$RANK" "$BIN/clairfsd" --dataset "$T/out" \
    --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --shutdown-wait-ms 3000 "$@" >"$T/log" 2>&1 &
  launcher=$!
}
# finished SECONDS: true when the launcher has exited within SECONDS; sets rc.
finished() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    if ! kill -0 "$launcher" 2>/dev/null; then
      wait "$launcher"; rc=$?; launcher=""
      return 0
    fi
    sleep 0.1
  done
  return 1
}
daemons() { pgrep -f "^$BIN/clairfsd --dataset $T/out"; }
daemons_left() { daemons | wc -l; }
mounts_left() { grep -c " $T/mnt" /proc/mounts; }

# --- SIGTERM twice to every rank, 30-70 ms apart (mpiexec forwards one through
# the wrapper, the other goes to the daemon directly), five times over.
for round in 1 2 3 4 5; do
  mkdir -p "$T"/mnt{0,1,2,3}
  launch
  "$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet || { fail "mounts not ready"; cat "$T/log"; exit 1; }
  cat "$T/mnt1/.clairfs/stats.json" >/dev/null
  pids=$(daemons | tr '\n' ' ')
  kill -TERM "$launcher"
  sleep "0.0$((2 + round))"
  kill -TERM $pids 2>/dev/null
  if finished 30; then
    [[ $rc -eq 0 ]] && pass "round $round: two SIGTERMs per rank, job exit 0" \
      || { fail "round $round: exit $rc after two SIGTERMs"; cat "$T/log"; }
  else
    fail "round $round: ranks still running 30 s after SIGTERM"; tail -20 "$T/log"
    kill -KILL $pids 2>/dev/null; kill -TERM "$launcher"; finished 10
  fi
  [[ $(daemons_left) -eq 0 && $(mounts_left) -eq 0 ]] || fail "round $round: daemons or mounts left"
done

# --- one rank's mount path is a regular file: every rank stops, the reason is logged.
rm -rf "$T"/mnt*; mkdir -p "$T"/mnt{0,1,3}; echo x >"$T/mnt2"
launch
if finished 30; then
  [[ $rc -ne 0 ]] && pass "a rank that cannot mount stops the job (exit $rc)" || fail "exit 0 with a bad mount path"
  grep -q "mnt2 exists and is not a directory" "$T/log" && pass "the log names the bad mount path" \
    || { fail "bad mount path not named"; cat "$T/log"; }
  grep -q "rank(s) 2 could not start" "$T/log" && pass "the other ranks name rank 2" \
    || { fail "other ranks do not name rank 2"; cat "$T/log"; }
else
  fail "ranks still running 30 s after one failed to start"; tail -20 "$T/log"
  pkill -KILL -f "^$BIN/clairfsd --dataset $T/out"; kill -TERM "$launcher"; finished 10
fi
[[ $(daemons_left) -eq 0 && $(mounts_left) -eq 0 ]] && pass "nothing left running or mounted" \
  || fail "daemons or mounts left after a failed start"

# --- a non-empty mount point is refused (its files would be hidden).
rm -rf "$T"/mnt*; mkdir -p "$T"/mnt{0,1,2,3}; echo keep >"$T/mnt3/notes.txt"
launch
if finished 30; then
  [[ $rc -ne 0 ]] && grep -q "mnt3 is not empty" "$T/log" && pass "non-empty mount point refused, named" \
    || { fail "non-empty mount point: exit $rc"; cat "$T/log"; }
else
  fail "ranks still running with a non-empty mount point"
  pkill -KILL -f "^$BIN/clairfsd --dataset $T/out"; kill -TERM "$launcher"; finished 10
fi
[[ $(cat "$T/mnt3/notes.txt") == keep ]] && pass "its file untouched" || fail "notes.txt lost"

# --- a second daemon on a point already mounted is refused, not stacked.
rm -rf "$T"/mnt*; mkdir -p "$T/mnt0"
"$BIN/clairfsd" --dataset "$T/out" --mount "$T/mnt0" >"$T/log1" 2>&1 &
single=$!
"$BIN/clairfs-wait" "$T/mnt0" --timeout 30 --quiet || fail "single mount not ready"
"$BIN/clairfsd" --dataset "$T/out" --mount "$T/mnt0" >"$T/log2" 2>&1
rc=$?
[[ $rc -eq 2 ]] && grep -q "already a mount point" "$T/log2" && pass "second daemon refused (exit 2)" \
  || { fail "second daemon: exit $rc"; cat "$T/log2"; }
[[ $(mounts_left) -eq 1 ]] && pass "one mount, not two" || fail "$(mounts_left) mounts at mnt0"
kill -TERM "$single"; wait "$single"

# --- a dead clairfs mount (daemon and its fusermount3 helper killed) is taken over.
"$BIN/clairfsd" --dataset "$T/out" --mount "$T/mnt0" >"$T/log1" 2>&1 &
single=$!
"$BIN/clairfs-wait" "$T/mnt0" --timeout 30 --quiet || fail "single mount not ready"
ls "$T/mnt0" >/dev/null
pkill -KILL -f "^fusermount3 .* -- $T/mnt0\$"
kill -KILL "$single"; wait "$single" 2>/dev/null
if [[ $(mounts_left) -eq 1 ]] && ! ls "$T/mnt0" >/dev/null 2>&1; then
  "$BIN/clairfsd" --dataset "$T/out" --mount "$T/mnt0" >"$T/log2" 2>&1 &
  single=$!
  "$BIN/clairfs-wait" "$T/mnt0" --timeout 30 --quiet && diff -r "$T/src" "$T/mnt0" >/dev/null \
    && grep -q "detached the dead mount" "$T/log2" && pass "dead mount detached, new mount serves" \
    || { fail "dead mount not taken over"; cat "$T/log2"; }
  [[ $(mounts_left) -eq 1 ]] && pass "one mount after the take-over" || fail "$(mounts_left) mounts at mnt0"
  kill -TERM "$single"; wait "$single"
else
  fail "could not leave a dead mount behind ($(mounts_left) mounts)"
fi

echo "$failures failures"
[[ $failures -eq 0 ]]
