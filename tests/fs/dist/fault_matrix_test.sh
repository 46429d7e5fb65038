#!/usr/bin/env bash
# Faults of one rank in each phase of a 4-rank job, and what the others must
# do: end on their own or after SIGTERM within a bound, leave no mount, and
# never return a wrong byte while serving.
#
#   phase     fault   the victim (rank 2, or rank 0 where said) is ...
#   start     kill    SIGKILLed before it calls MPI_Init (it never starts)
#   start     stop    SIGSTOPped before it calls MPI_Init, for good
#   serving   kill    SIGKILLed while the others are being read
#   serving   stop    SIGSTOPped while the others are being read, for good
#   serving   delay   SIGSTOPped for 3 s while the others are being read
#   shutdown  kill    SIGKILLed right after the job's SIGTERM
#   shutdown  stop    SIGSTOPped right before the job's SIGTERM, for good
#
# (A rank that fails after MPI_Init, in the start-up gates, is
# mpi_lifecycle_test.sh's case.)
# Bound: a rank waits at most start_timeout_ms in MPI_Init and again in the
# start-up gates, and
# after SIGTERM at most shutdown_wait_ms for its peers plus shutdown_wait_ms
# in MPI_Finalize (docs/fuse.md); the test allows 10 s on top of that for the
# unmount and this machine's load. Replicas 1: the files of a dead or stopped
# rank come from the shared packs (after peer_timeout_ms), so every mount
# must still read as the source tree.
set -uo pipefail
BIN=$CLAIRFS_BIN
RANK=$CLAIRFS_SRC/tests/fs/dist/rank.sh
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" faults
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

START_MS=6000 SHUTDOWN_MS=2000 PEER_MS=1000
BOUND_S=$(((START_MS + 2 * SHUTDOWN_MS) / 1000 + 10))
$PY "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$T/src" --small 400 --no-links >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 8 >/dev/null 2>&1 || { fail "pack"; exit 1; }

# The start-phase victim: the rank named by VICTIM kills or stops itself
# (FAULT) before the daemon is even executed, after writing its pid.
cat >"$T/victim.sh" <<'EOS'
#!/bin/bash
if [[ ${PMI_RANK:-} == "${VICTIM:-}" ]]; then
  echo $$ >"$VICTIM_PID"
  kill -"$FAULT" $$
fi
exec "$@"
EOS
chmod +x "$T/victim.sh"

launch() {  # launch [WRAPPER]
  rm -rf "$T"/ssd* "$T/log" "$T/victim.pid"; mkdir -p "$T"/mnt{0,1,2,3}
  "$MPIEXEC" -disable-auto-cleanup -n 4 "$RANK" "$@" "$BIN/clairfsd" --dataset "$T/out" \
    --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --peer-timeout-ms $PEER_MS \
    --shutdown-wait-ms $SHUTDOWN_MS --start-timeout-ms $START_MS >"$T/log" 2>&1 &
  launcher=$!
}
daemons() { pgrep -f "^$BIN/clairfsd --dataset $T/out" || true; }
rank_pid() {  # the clairfsd of rank $1, waiting up to 20 s for it to exist
  local p i
  for ((i = 0; i < 2000; i++)); do
    for p in $(daemons); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMI_RANK=$1" && { echo "$p"; return; }
    done
    sleep 0.01
  done
}
# gone_within S PID...: true when none of the PIDs is alive within S seconds.
gone_within() {
  local s=$1 i p alive
  shift
  for ((i = 0; i < s * 10; i++)); do
    alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && [[ $(ps -o stat= -p "$p") != Z* ]] && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  return 1
}
mounts_left() { grep -c " $T/mnt" /proc/mounts; }
others_of() { local v=$1 p; for p in $(daemons); do [[ $p != "$v" ]] && echo "$p"; done; }
# Every surviving mount reads as the source (within a bound: never a hang).
check_reads() {
  local what=$1 victim_rank=$2 r
  for r in 0 1 2 3; do
    [[ $r == "$victim_rank" ]] && continue
    timeout 120 diff -r "$T/src" "$T/mnt$r" >"$T/diff" 2>&1 \
      && pass "$what: rank $r mount reads as the source" \
      || { fail "$what: rank $r mount differs or hangs"; head -5 "$T/diff"; }
  done
}
# finish WHAT VICTIM_PID: after the job's end was asked for, the others are
# gone within the bound; then the victim is killed (a stopped one never ends
# by itself) and nothing may stay mounted once the launcher is gone.
finish() {
  local what=$1 victim=$2 others
  others=$(others_of "$victim")
  # shellcheck disable=SC2086
  if gone_within $BOUND_S $others; then
    pass "$what: the other ranks ended within ${BOUND_S} s"
  else
    fail "$what: ranks still running after ${BOUND_S} s: $(others_of "$victim" | tr '\n' ' ')"
    tail -n 20 "$T/log"
    # Where each one is: its rank, whether it logged its unmount, its threads.
    for p in $(others_of "$victim"); do
      echo "--- pid $p: $(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep '^PMI_RANK=')"
      command -v gdb >/dev/null && timeout 20 gdb -p "$p" -batch -ex "thread apply all bt 12" 2>/dev/null \
        | grep -E '^(Thread|#)' | head -n 80
    done
  fi
  kill -KILL "$victim" 2>/dev/null
  kill -TERM "$launcher" 2>/dev/null
  if gone_within 30 "$launcher"; then wait "$launcher" 2>/dev/null; else fail "$what: mpiexec still running"; fi
  launcher=""
  pkill -KILL -f "^$BIN/clairfsd --dataset $T/out"
  local i
  for ((i = 0; i < 50 && $(mounts_left) > 0; i++)); do sleep 0.1; done
  # A SIGKILLed daemon's mount is removed by fusermount3's helper, or by the
  # next daemon there (docs/fuse.md); either way it must not be live.
  for m in "$T"/mnt*; do
    mountpoint -q "$m" && ls "$m" >/dev/null 2>&1 && fail "$what: $m still mounted and live"
    mountpoint -q "$m" && fusermount3 -u -z "$m"
  done
  return 0
}

for victim_rank in 2 0; do
  for fault in kill stop; do
    what="start/$fault rank $victim_rank"
    VICTIM=$victim_rank FAULT=${fault^^} VICTIM_PID=$T/victim.pid launch "$T/victim.sh"
    for ((i = 0; i < 500; i++)); do [[ -s $T/victim.pid ]] && break; sleep 0.02; done
    v=$(cat "$T/victim.pid" 2>/dev/null)
    [[ -n $v ]] || { fail "$what: the victim wrapper did not run"; finish "$what" 0; continue; }
    # No SIGTERM: the others must give up by themselves (MPI_Init's bound).
    finish "$what" "$v"
    grep -q "MPI_Init did not return within $START_MS ms" "$T/log" \
      && pass "$what: the others said why they gave up" || { fail "$what: no reason in the log"; tail -5 "$T/log"; }
  done
done

for fault in kill stop delay; do
  what="serving/$fault rank 2"
  launch
  "$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet || { fail "$what: mounts not ready"; finish "$what" 0; continue; }
  v=$(rank_pid 2)
  ( cd "$T/src" && find . -type f | head -n 100 ) | while read -r f; do cat "$T/mnt1/$f" >/dev/null; done
  case $fault in
    kill) kill -KILL "$v" ;;
    stop) kill -STOP "$v" ;;
    delay) kill -STOP "$v"; (sleep 3; kill -CONT "$v") & resume=$! ;;
  esac
  check_reads "$what" 2
  if [[ $fault == delay ]]; then
    wait "$resume"
    diff -r "$T/src" "$T/mnt2" >/dev/null 2>&1 && pass "$what: the delayed rank serves again" \
      || fail "$what: the delayed rank's mount differs"
    kill -TERM "$launcher"
    if gone_within $BOUND_S "$launcher"; then
      wait "$launcher"; rc=$?
      [[ $rc -eq 0 ]] && pass "$what: clean job exit after the delay" || fail "$what: job exit $rc"
    else
      fail "$what: job did not end within ${BOUND_S} s"
    fi
    [[ $(mounts_left) -eq 0 ]] && pass "$what: no mount left" || fail "$what: $(mounts_left) mounts left"
    pkill -KILL -f "^$BIN/clairfsd --dataset $T/out"; launcher=""
    continue
  fi
  kill -TERM "$launcher"
  finish "$what" "$v"
done

for fault in kill stop; do
  what="shutdown/$fault rank 2"
  launch
  "$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet || { fail "$what: mounts not ready"; finish "$what" 0; continue; }
  v=$(rank_pid 2)
  others=$(others_of "$v")
  if [[ $fault == stop ]]; then kill -STOP "$v"; kill -TERM "$launcher"; else kill -TERM "$launcher"; kill -KILL "$v"; fi
  # The end of a job signals every rank (as Slurm does), not only through
  # mpiexec: hydra can lose its forwarded SIGTERM when a rank dies at that
  # moment, and the bound tested here is clairfsd's, not hydra's forwarding.
  # shellcheck disable=SC2086
  kill -TERM $others 2>/dev/null
  finish "$what" "$v"
done

echo "$failures failures"
[[ $failures -eq 0 ]]
