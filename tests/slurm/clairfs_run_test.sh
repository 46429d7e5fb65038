#!/usr/bin/env bash
# clairfs-run outside Slurm (one daemon through mpiexec on this host): the
# command's exit status comes back, the daemon is stopped and its log kept
# whatever the command did, and each start-up problem a user will meet is
# named with what to do about it.
set -uo pipefail
BIN=$CLAIRFS_BIN
RUN=$BIN/clairfs-run
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" clairfs-run
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
mounted() { grep -q " $1 " /proc/mounts; }
daemons_left() { pgrep -f "^$BIN/clairfsd --dataset $T/out" | wc -l; }

$PY "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$T/src" --small 100 --no-links || exit 1
"$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 2 >/dev/null 2>&1 || { fail "pack"; exit 1; }
cd "$T"

# --- the command sees the dataset; its status comes back; stats are saved.
"$RUN" --dataset out --mount "$T/mnt0" --logs "$T/logs1" -- diff -r "$T/src" "$T/mnt0" >"$T/out1" 2>&1
rc=$?
[[ $rc -eq 0 ]] && pass "diff -r through the mount, exit 0" || { fail "exit $rc"; cat "$T/out1"; }
[[ -s $T/logs1/stats-$(hostname).json ]] && grep -q "stats: $T/logs1/stats-" "$T/out1" \
  && pass "stats saved and their place printed" || { fail "no stats"; cat "$T/out1"; }
mounted "$T/mnt0" && fail "mount left after the run" || pass "unmounted after the run"
# Nothing told the daemon an order (no settings, no Python loader): the summary says so.
grep -q "clairfs-run: $(hostname): prefetching off (no prefetch settings, and no loader reported" "$T/out1" \
  && pass "the summary: prefetching off, and why" || { fail "no summary line"; cat "$T/out1"; }

# --- a writable area (from --config): written by the command, drained when the
# daemons stop, and the run says so.
printf 'writes_dir: outputs\nwrites_local: %s\nwrites_persist: %s\n' "$T/wlocal{rank}" "$T/wpersist" \
  >"$T/writes.yaml"
"$RUN" --dataset out --mount "$T/mnt0" --config "$T/writes.yaml" --logs "$T/logsw" -- \
  sh -c "echo 'epoch 1' >'$T/mnt0/outputs/log.txt'" >"$T/outw" 2>&1
[[ $? -eq 0 && $(cat "$T/wpersist/log.txt" 2>/dev/null) == "epoch 1" ]] &&
  grep -q "clairfs-run: $(hostname): .*writes: 1 file(s), 8 bytes drained to $T/wpersist" "$T/outw" &&
  pass "a file written through the mount is drained at the end, and the run says so" ||
  { fail "writes through clairfs-run"; cat "$T/outw"; }

# --- the summary of saved stats: readiness after the first epoch, and why not.
mkdir -p "$T/sum"
cat >"$T/sum/stats-n1.json" <<'JSON'
{"prefetch": {"enabled": true, "sampler": "reported", "opens": 300, "ready": 250,
 "stall_ns": 1500000000, "deviations": 3, "lost": false,
 "per_epoch": [{"epoch": 0, "opens": 100, "ready": 60}, {"epoch": 1, "opens": 100, "ready": 95},
               {"epoch": 2, "opens": 100, "ready": 95}]},
 "report": {"settings_check": "", "first_model_error": ""},
 "cluster": {"source": {"dataset_bytes": 8388608, "share_bytes": 4194304, "staged_bytes": 4194304,
                        "direct_bytes": 1048576, "distinct_bytes": 4718592, "reread_bytes": 524288}}}
JSON
cat >"$T/sum/stats-n2.json" <<'JSON'
{"prefetch": {"enabled": true, "sampler": "torch-distributed", "opens": 50, "ready": 5,
 "stall_ns": 0, "deviations": 40, "lost": true, "likely_wrong": "prefetch_world_size=4",
 "per_epoch": [{"epoch": 0, "opens": 50, "ready": 5}]},
 "report": {"settings_check": "seed: configured 1, reported 2", "first_model_error": ""},
 "cluster": {"source": {"dataset_bytes": 8388608, "share_bytes": 4194304, "staged_bytes": 4194304,
                        "direct_bytes": 0, "distinct_bytes": 4194304, "reread_bytes": 0}}}
JSON
echo '{"prefetch": ' >"$T/sum/stats-n3.json"
"$BIN/clairfs-summary" "$T/sum"/stats-n{1,2,3}.json >"$T/sum/out" 2>&1
grep -qx "clairfs-run: n1: prefetch followed reported: 190 of 200 opens after the first epoch ready (95.0%), 1.50 s waited, 3 deviations" "$T/sum/out" \
  && grep -qx "clairfs-run: n2: prefetch followed torch-distributed: 5 of 50 opens ready, 0.00 s waited, 40 deviations" "$T/sum/out" \
  && grep -q "clairfs-run: n2: the opens stopped following the predicted order (prefetch.lost): the prefetch settings do not match" "$T/sum/out" \
  && grep -q "clairfs-run: n2: prefetch.likely_wrong: prefetch_world_size=4 (what the job's first opens match" "$T/sum/out" \
  && grep -qx "clairfs-run: n2: report.settings_check: seed: configured 1, reported 2" "$T/sum/out" \
  && grep -q "clairfs-run: n3: stats unreadable: " "$T/sum/out" \
  && grep -qx "clairfs-run: the dataset directory: 2 node(s) read 9.0 MiB from it (8.0 MiB by staging, 1.0 MiB by other reads) for a dataset of 8.0 MiB: 1.12x its size; 0.5 MiB of it read again by the node that had read it" "$T/sum/out" \
  && [[ $(wc -l <"$T/sum/out") -eq 7 ]] \
  && pass "the summary: ready after the first epoch, waits, deviations, lost and why (the setting likely wrong), unreadable stats named, the dataset directory's bytes read" \
  || { fail "summary"; cat "$T/sum/out"; }

# --- a failing command: its status, the daemon stopped, the log kept.
"$RUN" --dataset out --mount "$T/mnt0" --logs "$T/logs2" -- bash -c 'cat mnt0/.clairfs/config >/dev/null; exit 7' >"$T/out2" 2>&1
rc=$?
[[ $rc -eq 7 ]] && pass "failing command: exit status 7 forwarded" || { fail "exit $rc, want 7"; cat "$T/out2"; }
grep -q "the command failed (exit status 7); the daemons were stopped, their logs kept in $T/logs2" "$T/out2" \
  && [[ -s $T/logs2/clairfsd-$(hostname).log ]] && pass "failure said, log kept" || { fail "message"; cat "$T/out2"; }
[[ $(daemons_left) -eq 0 ]] && ! mounted "$T/mnt0" && pass "nothing left running or mounted" || fail "daemon or mount left"

# --- a command killed by a signal: 128 + signal, as a shell reports it.
"$RUN" --dataset out --mount "$T/mnt0" --logs "$T/logs3" -- bash -c 'kill -KILL $$' >"$T/out3" 2>&1
rc=$?
[[ $rc -eq 137 ]] && pass "command killed by SIGKILL: exit 137" || { fail "exit $rc, want 137"; cat "$T/out3"; }

# --- SIGTERM to clairfs-run (scancel, Ctrl-C): command and daemon stopped.
nap="300.$$"  # a duration of this test's own: other runs of it may be sleeping 300 s too
"$RUN" --dataset out --mount "$T/mnt0" --logs "$T/logs4" -- sleep "$nap" >"$T/out4" 2>&1 &
run=$!
"$BIN/clairfs-wait" "$T/mnt0" --timeout 30 --quiet
sleep 0.5
kill -TERM "$run"
wait "$run"
rc=$?
[[ $rc -eq 143 ]] && grep -q "got SIGTERM" "$T/out4" && pass "SIGTERM: exit 143" || { fail "SIGTERM: exit $rc"; cat "$T/out4"; }
[[ $(daemons_left) -eq 0 ]] && ! mounted "$T/mnt0" && ! pgrep -xf "sleep $nap" >/dev/null \
  && pass "SIGTERM: command, daemon and mount gone" || fail "SIGTERM left something behind"

# --- the dataset is not there: said, with what to do, before any daemon starts.
"$RUN" --dataset "$T/nowhere" --mount "$T/mnt0" --logs "$T/logs5" -- true >"$T/out5" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "dataset $T/nowhere is not visible: put it on a file system that every node mounts" "$T/out5" \
  && pass "missing dataset named (exit 1)" || { fail "missing dataset: exit $rc"; cat "$T/out5"; }

# --- the mount point is in use.
"$BIN/clairfsd" --dataset "$T/out" --mount "$T/busy" >"$T/busy.log" 2>&1 &
busy=$!
"$BIN/clairfs-wait" "$T/busy" --timeout 30 --quiet
"$RUN" --dataset out --mount "$T/busy" --logs "$T/logs6" -- true >"$T/out6" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "mount point $T/busy is in use (a daemon of an earlier job?): unmount it (fusermount3 -u -z $T/busy)" "$T/out6" \
  && pass "mount point in use named (exit 1)" || { fail "busy mount: exit $rc"; cat "$T/out6"; }
kill -TERM "$busy"; wait "$busy"

# --- a daemon that does not come up in time: the timeout and its log tail.
mkdir -p "$T/mnt7"
"$RUN" --dataset out --mount "$T/mnt7" --timeout 0 --logs "$T/logs7" -- true >"$T/out7" 2>&1
rc=$?
# The daemon is stopped before its log is shown; on a busy machine it may be
# stopped before it wrote a line, and then the log is said to be empty.
log7=$(ls "$T"/logs7/clairfsd-*.log)
if [[ -s $log7 ]]; then
  said_log() { grep -q -- "--- last lines of $log7" "$T/out7" && grep -q "^clairfs-run:   clairfsd: " "$T/out7"; }
else
  said_log() { grep -q -- "--- $log7 is empty" "$T/out7"; }
fi
[[ $rc -eq 1 ]] && grep -q "the mounts were not all ready within 0 s" "$T/out7" && said_log \
  && pass "timeout said, with the daemon's log tail" || { fail "timeout: exit $rc"; cat "$T/out7"; }
[[ $(daemons_left) -eq 0 ]] && ! mounted "$T/mnt7" && pass "timed-out daemon stopped" || fail "timed-out daemon left"

# --- a config clairfsd would refuse: clairfs-doctor names it on the node
# before any daemon starts.
echo "no_such_key: 1" >"$T/bad.yaml"
"$RUN" --dataset out --mount "$T/mnt8" --config "$T/bad.yaml" --logs "$T/logs8" -- true >"$T/out8" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "clairfs-run:   on $(hostname): clairfsd would refuse its configuration: $T/bad.yaml:1: no_such_key: unknown key: correct $T/bad.yaml" "$T/out8" \
  && ! grep -q "daemons exited" "$T/out8" && pass "bad config: named by the doctor, no daemon started" \
  || { fail "bad config: exit $rc"; cat "$T/out8"; }

# --- a daemon that exits at start (a writes_local it cannot make, which the
# doctor does not check): said at once, not after the timeout.
start=$SECONDS
printf 'writes_dir: w\nwrites_local: /proc/nope/local\nwrites_persist: %s\n' "$T/persist9" >"$T/writes.yaml"
"$RUN" --dataset out --mount "$T/mnt9" --config "$T/writes.yaml" --logs "$T/logs9" -- true >"$T/out9" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "the daemons exited before every mount was ready" "$T/out9" && grep -q "cannot make /proc/nope/local" "$T/out9" \
  && ((SECONDS - start < 60)) && pass "a daemon that cannot start: said at once with its log" \
  || { fail "daemon exit at start: exit $rc"; cat "$T/out9"; }

echo "$failures failures"
[[ $failures -eq 0 ]]
