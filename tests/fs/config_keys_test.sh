#!/bin/bash
# Every key clairfsd documents changes what the daemon does. Each key below is
# set away from its default and the part it configures is seen doing
# something else: stats.json (counters, and what the parts report they run
# with), the daemon's threads by name, its /dev/fuse descriptors, the mount's
# options and read-ahead, its log, its timing against a stopped peer. A key
# listed by `clairfsd --help` with no probe here fails the test, so a new key
# comes with its proof. (pack_readahead and the writes_ keys have tests of
# their own: named below.)
source "$(dirname "$0")/fuse_lib.sh"
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec) || skip "no mpiexec"
"$PY" -c 'import numpy' 2>/dev/null || skip "$PY cannot import numpy (make_imagefolder.py)"

"$PY" "$SRC_DIR/scripts/make_imagefolder.py" "$WORK/src" --classes 3 --per-class 10 --size 32 >/dev/null
mkdir -p "$WORK/src/other/deep"
echo "not an image" >"$WORK/src/other/deep/notes.txt"
pack "$WORK/src" "$WORK/out" --partitions 4
FILES=($(cd "$WORK/src" && find train -type f | sort))

probed=()
ok() { echo "ok   $1: $2"; probed+=("$1"); }
start() {  # start NAME [clairfsd options...]: MNT, LOG, DAEMON_PID
  MNT=$WORK/mnt-$1 LOG=$WORK/$1.log
  shift
  mount_dataset "$WORK/out" "$MNT" "$LOG" "$@"
}
stop() { kill "$DAEMON_PID"; wait "$DAEMON_PID" || fail "clairfsd exited non-zero: $(cat "$LOG")"; }
st() {  # st EXPR [MNT]: a value from stats.json (d = the document)
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1] + "/.clairfs/stats.json")); print(eval(sys.argv[2]))' \
    "${2:-$MNT}" "$1"
}
named() { grep -lx "$2" /proc/"$1"/task/*/comm 2>/dev/null | wc -l; }  # named PID NAME: its threads so named
cpu_ticks() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }  # user + system time
# spin_cost: the daemon's CPU ticks over 40 lookups of missing names 20 ms
# apart (gaps a spin window of up to 100 ms grows to cover).
spin_cost() {
  local t0 i
  t0=$(cpu_ticks $DAEMON_PID)
  for i in $(seq 1 40); do stat "$MNT/spin-$i" >/dev/null 2>&1 || true; sleep 0.02; done
  echo $(($(cpu_ticks $DAEMON_PID) - t0))
}
fuse_fds() { ls -l /proc/"$1"/fd 2>/dev/null | grep -c ' -> /dev/fuse$'; }
expect() {  # expect KEY WHAT GOT WANT
  [[ $3 == "$4" ]] || { cat "$LOG"; fail "$1: $2 is $3, want $4"; }
}
# What one operation, repeated 3 times after a first time, costs the daemon in
# REQUEST (lookup, getattr, opendir or open) requests. Reading stats.json is
# itself a lookup and an open of the control file: the cost of a read with
# nothing between is taken off.
counts() { st '" ".join(str(d["requests"][k]) for k in ("lookup", "getattr", "opendir", "open"))'; }
cost() {  # cost REQUEST COMMAND...
  local k=$1 a b c i
  shift
  "$@" >/dev/null 2>&1 || true
  a=($(counts)); b=($(counts))
  for i in 1 2 3; do "$@" >/dev/null 2>&1 || true; done
  c=($(counts))
  case $k in lookup) i=0 ;; getattr) i=1 ;; opendir) i=2 ;; open) i=3 ;; esac
  echo $(((c[i] - b[i]) - (b[i] - a[i])))
}
traffic() {  # traffic N: the costs for the dataset's file N
  local f=$MNT/${FILES[$1]}
  LOOKUPS=$(cost lookup stat "$f") GETATTRS=$(cost getattr stat "$f")
  MISSES=$(cost lookup stat "$MNT/no-such-$1") OPENDIRS=$(cost opendir ls "$MNT/train/class_001")
  OPENS=$(cost open cat "$f")
}

# --- The defaults, for comparison.
start base
diff -r "$WORK/src" "$MNT" >/dev/null || fail "the mount differs from the dataset"
ok dataset "the mount shows the dataset directory's files (diff -r)"
ok mount "the mount appears where asked"
base_spin=$(spin_cost)
traffic 0
base_traffic="$LOOKUPS $GETATTRS $MISSES $OPENDIRS $OPENS"
base_pid=$DAEMON_PID
expect threads "clairfs-read threads by default" "$(named $base_pid clairfs-read)" 10
expect fuse_threads "/dev/fuse descriptors by default (1 reading thread, clone_fd true)" "$(fuse_fds $base_pid)" 1
bdi=$(mountpoint -d "$MNT")
for i in $(seq 1 50); do [[ $(cat /sys/class/bdi/$bdi/read_ahead_kb) == 1024 ]] && break; sleep 0.1; done
expect read_ahead "read_ahead_kb by default" "$(cat /sys/class/bdi/$bdi/read_ahead_kb)" 1024
grep -q "allow_other" <(grep -F " $MNT " /proc/mounts) && fail "allow_other without the key"
grep -q "^clairfsd: mounted " "$LOG" || fail "no info lines at the default log level"
grep -q ": debug: " "$LOG" && fail "debug lines at the default log level"
grep -q "^socket @clairfs-report" "$MNT/.clairfs/report" || fail "no report channel by default"
expect report "stats.json has a report section by default" "$(st '"report" in d')" True
stop

# --- One daemon per group of keys, each away from its default.
start keys --ram-cache 3M --threads 3 --entry-timeout 0 --attr-timeout 0 --negative-timeout 0 \
  --no-open false --no-opendir true --read-ahead 4M --allow-other true --log-level debug \
  --report false
traffic 1
echo "requests for 3 stats, 3 stats of a missing name, 3 listings, 3 reads (lookups getattrs misses opendirs opens): defaults $base_traffic, changed $LOOKUPS $GETATTRS $MISSES $OPENDIRS $OPENS"
read b_look b_get b_miss b_od b_open <<<"$base_traffic"
expect ram_cache "ram_cache.capacity_bytes" "$(st 'd["ram_cache"]["capacity_bytes"]')" $((3 << 20))
ok ram_cache "the RAM cache's capacity is 3 MiB"
expect threads "clairfs-read threads" "$(named $DAEMON_PID clairfs-read)" 3
ok threads "3 clairfs-read threads (10 by default)"
((LOOKUPS >= 3 && b_look == 0)) || fail "entry_timeout 0: $LOOKUPS lookups for 3 stats (defaults: $b_look)"
ok entry_timeout "0: every stat looked the name up again ($LOOKUPS lookups; $b_look by default)"
((GETATTRS >= 3 && b_get == 0)) || fail "attr_timeout 0: $GETATTRS getattrs for 3 stats (defaults: $b_get)"
ok attr_timeout "0: every stat asked for the attributes ($GETATTRS; $b_get by default)"
((MISSES >= 3 && b_miss == 0)) || fail "negative_timeout 0: $MISSES lookups of a missing name x3 (defaults: $b_miss)"
ok negative_timeout "0: every stat of a missing name reached the daemon ($MISSES; $b_miss by default)"
((OPENS >= 3 && b_open == 0)) || fail "no_open false: $OPENS opens for 3 cats (defaults: $b_open)"
ok no_open "false: every open reached the daemon ($OPENS; $b_open by default)"
((OPENDIRS == 0 && b_od >= 3)) || fail "no_opendir true: $OPENDIRS opendirs for 3 listings (defaults: $b_od)"
ok no_opendir "true: listings opened without the daemon ($OPENDIRS opendirs; $b_od by default)"
bdi=$(mountpoint -d "$MNT")
for i in $(seq 1 50); do [[ $(cat /sys/class/bdi/$bdi/read_ahead_kb) == 4096 ]] && break; sleep 0.1; done
expect read_ahead "read_ahead_kb" "$(cat /sys/class/bdi/$bdi/read_ahead_kb)" 4096
ok read_ahead "the mount's read_ahead_kb is 4096 (1024 by default)"
grep -F " $MNT " /proc/mounts | grep -q allow_other || fail "allow_other true: not among the mount's options"
ok allow_other "the mount has allow_other"
grep -q ": debug: " "$LOG" || fail "log_level debug: no debug lines"
[[ -e $MNT/.clairfs/report ]] && fail "report false: MNT/.clairfs/report exists"
expect report "stats.json has a report section" "$(st '"report" in d')" False
ok report "false: no channel for the job's orders (MNT/.clairfs/report and the report section present by default)"
stop

start quiet --log-level error --fuse-spin-us 100000
cat "$MNT/${FILES[2]}" >/dev/null
spun=$(spin_cost)
stop
((spun >= 20 && base_spin <= 10)) || fail "fuse_spin_us 100000: $spun CPU ticks over 40 lookups ($base_spin by default)"
ok fuse_spin_us "100000: the reading thread looked for the next request between lookups ($spun CPU ticks over 40 lookups; $base_spin by default)"
grep -q "^clairfsd: mounted " "$LOG" && fail "log_level error: info lines logged"
grep -q ": debug: " "$LOG" && fail "log_level error: debug lines logged"
ok log_level "debug lines at debug, none at the default, not even info lines at error"

# fuse_threads > 1 runs libfuse's multi-threaded loop, whose worker threads
# read /dev/fuse each through a descriptor of its own with clone_fd (true by
# default); with 1 the main thread reads the session's one descriptor.
start loop --fuse-threads 4 --clone-fd true
cat "$MNT/${FILES[3]}" >/dev/null
clones=$(fuse_fds $DAEMON_PID)
((clones >= 2)) || fail "clone_fd true: $clones /dev/fuse descriptors with fuse_threads 4"
stop
start loop1 --fuse-threads 4 --clone-fd false
cat "$MNT/${FILES[3]}" >/dev/null
expect clone_fd "/dev/fuse descriptors with fuse_threads 4, clone_fd false" "$(fuse_fds $DAEMON_PID)" 1
ok fuse_threads "4: reading threads with descriptors of their own ($clones; 1 with 1 and clone_fd true)"
ok clone_fd "true: each reading thread has a /dev/fuse descriptor of its own ($clones; 1 with false)"
stop

# --- Staging: local_dir, stage_threads and stage_yield_ms (what the pause does:
# staging_test's "staging pauses while").
start staged --local-dir "$WORK/ssd" --stage-threads 3 --stage-yield-ms 7
for i in $(seq 1 100); do [[ $(st 'd["cluster"]["staging"]["finished"]') == True ]] && break; sleep 0.1; done
expect local_dir "packs staged" "$(ls "$WORK/ssd" | grep -c '^part-0000[0-3]$')" 4
ok local_dir "this node's 4 packs copied there"
expect stage_threads "staging.threads" "$(st 'd["cluster"]["staging"]["threads"]')" 3
ok stage_threads "3 packs copied at once (2 by default)"
expect stage_yield_ms "staging.yield_ms" "$(st 'd["cluster"]["staging"]["yield_ms"]')" 7
ok stage_yield_ms "staging pauses 7 ms after a read of the job (5 by default)"
stop

# --- The prefetcher's keys. Opens through FUSE requests, so the test can see
# which opens were predicted.
PF=(--prefetch-sampler torch-distributed --prefetch-root train --prefetch-seed 3
  --prefetch-world-size 4 --prefetch-ranks-per-node 2 --prefetch-start-epoch 1 --prefetch-epochs 2
  --prefetch-batch-size 2 --prefetch-workers 3 --prefetch-factor 4 --ram-cache 5M
  --prefetch-threads 3 --prefetch-wait-ms 1234 --prefetch-opens fuse --prefetch-shared-stream false)
start pf "${PF[@]}"
expect prefetch_sampler "prefetch.sampler" "$(st 'd["prefetch"]["sampler"]')" torch-distributed
ok prefetch_sampler "the torch-distributed prediction runs"
grep -q "prefetch: torch-distributed over 30 files" "$LOG" || fail "prefetch_root: not 30 files: $(grep prefetch: "$LOG")"
ok prefetch_root "train: the 30 images, not the other files"
expect prefetch_start_epoch "job.start_epoch" "$(st 'd["prefetch"]["job"]["start_epoch"]')" 1
ok prefetch_start_epoch "the planner starts at epoch 1"
expect prefetch_epochs "job.end_epoch" "$(st 'd["prefetch"]["job"]["end_epoch"]')" 3
ok prefetch_epochs "2 epochs from 1: the planner ends before 3"
expect prefetch_world_size "local ranks" "$(st '[r["rank"] for r in d["prefetch"]["ranks"]]')" "[0, 1]"
ok prefetch_world_size "4 ranks at 2 per node: this daemon (node 0) predicts ranks 0 and 1"
ok prefetch_ranks_per_node "2: two local ranks (world 4 over 1 daemon would give 4)"
grep -q "local ranks \[0,1\]" "$LOG" || fail "prefetch_shared_stream false: $(grep prefetch: "$LOG")"
expect prefetch_batch_size "job.batch_size" "$(st 'd["prefetch"]["job"]["batch_size"]')" 2
expect prefetch_workers "job.num_workers" "$(st 'd["prefetch"]["job"]["num_workers"]')" 3
expect prefetch_factor "job.prefetch_factor" "$(st 'd["prefetch"]["job"]["prefetch_factor"]')" 4
ok prefetch_batch_size "the planner models batches of 2"
ok prefetch_workers "3 loader workers"
ok prefetch_factor "4 batches per worker"
expect ram_cache "prefetch.budget_bytes" "$(st 'd["prefetch"]["budget_bytes"]')" $((5 << 20))
expect ram_cache "ram_cache.kept_by" "$(st 'd["ram_cache"]["kept_by"]')" planner
echo "ok   ram_cache: with a sampler it is also the planner's budget (5 MiB), and the planner keeps the cache"
expect prefetch_threads "clairfs-fetch threads" "$(named $DAEMON_PID clairfs-fetch)" 3
ok prefetch_threads "3 clairfs-fetch threads"
expect prefetch_wait_ms "job.open_wait_ms" "$(st 'd["prefetch"]["job"]["open_wait_ms"]')" 1234
ok prefetch_wait_ms "the engine waits at most 1234 ms"
expect prefetch_opens "open_watcher.opens_seen_through" "$(st 'd["open_watcher"]["opens_seen_through"]')" fuse
ok prefetch_opens "fuse: opens come as OPEN requests (inotify by default)"
stop
# The sampler's own settings (prefetch_<option>): one rank, no loader workers
# (a window of a few entries), seed 3's order opened: every open predicted
# with seed 3, deviations with seed 4.
mapfile -t order3 < <("$BIN/clairfs-order" --sampler torch-distributed --root "$WORK/src/train" --seed 3)
dev=() pred=()
SEED=(--prefetch-sampler torch-distributed --prefetch-root train --prefetch-opens fuse)
for seed in 3 4; do
  start seed$seed "${SEED[@]}" --prefetch-seed $seed
  for f in "${order3[@]:0:8}"; do cat "$MNT/train/$f" >/dev/null; done
  dev[$seed]=$(st 'd["prefetch"]["deviations"]') pred[$seed]=$(st 'd["prefetch"]["predicted"]')
  stop
done
((pred[3] == 8 && dev[3] == 0 && dev[4] > 0)) || fail "prefetch_seed: seed 3's order:" \
  "${pred[3]} predicted, ${dev[3]} deviations with seed 3; ${dev[4]} deviations with 4"
ok prefetch_seed "seed 3's order predicted with seed 3 (8 of 8), ${dev[4]} deviations with seed 4"
start pfs "${PF[@]}" --prefetch-shared-stream true --prefetch-world-size 2 --prefetch-ranks-per-node 2
grep -q "local readers of one shared stream \[0,0\]" "$LOG" || fail "prefetch_shared_stream true: $(grep prefetch: "$LOG")"
ok prefetch_shared_stream "true: two local readers of rank 0's stream; false: ranks 0 and 1"
stop

# --- Multi-node keys: 2 ranks, replicas 1, rank 1 stopped (SIGSTOP).
pack "$WORK/src" "$WORK/out2" --partitions 4
mkdir -p "$WORK"/mr{0,1}
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$WORK/out2" --mount "$WORK/mr{rank}" \
  --server-threads 3 --peer-timeout-ms 300 --shutdown-wait-ms 1000 >"$WORK/mpi.log" 2>&1 &
launcher=$!
DAEMON_PIDS+=("$launcher")
MOUNTS+=("$WORK/mr0" "$WORK/mr1")
"$BIN/clairfs-wait" "$WORK/mr0" "$WORK/mr1" --timeout 60 --quiet || { cat "$WORK/mpi.log"; fail "2-rank mounts"; }
pid0=$(st 'd["cluster"]["pid"]' "$WORK/mr0") pid1=$(st 'd["cluster"]["pid"]' "$WORK/mr1")
LOG=$WORK/mpi.log
expect server_threads "clairfs-serve threads of rank 0" "$(named "$pid0" clairfs-serve)" 3
expect server_threads "clairfs-serve threads of rank 1" "$(named "$pid1" clairfs-serve)" 3
ok server_threads "3 clairfs-serve threads per rank (4 by default)"
kill -STOP "$pid1"
t0=$(date +%s%N)
cat "$WORK"/mr0/train/*/* >/dev/null || fail "reads on rank 0 with rank 1 stopped"
ms=$((($(date +%s%N) - t0) / 1000000))
((ms >= 300 && ms < 1900)) || fail "peer_timeout_ms 300: rank 0's reads took $ms ms with its peer stopped"
ok peer_timeout_ms "300: rank 0 gave up on its stopped peer and read the dataset's packs in $ms ms (2000 ms by default)"
t0=$(date +%s%N)
kill -TERM "$pid0"
for i in $(seq 1 100); do kill -0 "$pid0" 2>/dev/null || break; sleep 0.1; done
ms=$((($(date +%s%N) - t0) / 1000000))
kill -0 "$pid0" 2>/dev/null && fail "shutdown_wait_ms 1000: rank 0 still running 10 s after SIGTERM"
((ms >= 900)) || fail "shutdown_wait_ms 1000: rank 0 exited after $ms ms without waiting for its peer"
ok shutdown_wait_ms "1000: rank 0 waited for its stopped peer and exited $ms ms after SIGTERM (10 s each step by default)"
kill -CONT "$pid1" 2>/dev/null || true
kill -TERM "$launcher" 2>/dev/null || true
wait "$launcher" 2>/dev/null || true

# start_timeout_ms: rank 1 never starts; rank 0 gives up at the bound.
cat >"$WORK/late.sh" <<'EOF'
#!/bin/bash
[[ ${PMI_RANK:-} == 1 ]] && sleep 60
exec "$@"
EOF
chmod +x "$WORK/late.sh"
mkdir -p "$WORK"/late{0,1}
t0=$(date +%s%N)
"$MPIEXEC" -n 2 "$WORK/late.sh" "$BIN/clairfsd" --dataset "$WORK/out2" --mount "$WORK/late{rank}" \
  --start-timeout-ms 1500 >"$WORK/late.log" 2>&1 &
launcher=$!
DAEMON_PIDS+=("$launcher")
LOG=$WORK/late.log
said="did not return within 1500 ms"
for i in $(seq 1 150); do grep -q "$said" "$LOG" && break; sleep 0.1; done
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q "$said" "$LOG" || { cat "$LOG"; fail "start_timeout_ms 1500: rank 0 still waiting 15 s after the start"; }
ok start_timeout_ms "1500: rank 0 stopped waiting for rank 1 after $ms ms: $(grep -m1 "$said" "$LOG" | cut -c1-70)..."
kill -TERM "$launcher" 2>/dev/null || true
wait "$launcher" 2>/dev/null || true

# frames_ahead: a framed file read in order has its next frames hinted (4 by
# default, counted in stats.json); 0 gives no hint.
mkdir -p "$WORK/big"
head -c $((64 * 4096)) /dev/urandom >"$WORK/big/one.bin"
pack "$WORK/big" "$WORK/out-big" --partitions 1 --frame-size 4096
for n in 4 0; do
  MNT=$WORK/mnt-ahead$n LOG=$WORK/ahead$n.log
  mount_dataset "$WORK/out-big" "$MNT" "$LOG" --frames-ahead "$n"
  cmp -s "$MNT/one.bin" "$WORK/big/one.bin" || fail "frames_ahead $n: the file read wrong"
  hints[$n]=$(st 'd["frames_ahead"]["hints"]')
  expect frames_ahead "frames_ahead.frames" "$(st 'd["frames_ahead"]["frames"]')" "$n"
  stop
done
((hints[4] > 0 && hints[0] == 0)) || fail "frames_ahead: ${hints[4]} hints with 4, ${hints[0]} with 0"
ok frames_ahead "a 64-frame file read in order: ${hints[4]} read-ahead hints with 4, none with 0"

# pack_readahead: tests/fs/fuse_pack_readahead_test.sh (drop_caches, fincore).
grep -q -- "--pack-readahead" "$SRC_DIR/tests/fs/fuse_pack_readahead_test.sh" && probed+=(pack_readahead)
# The writable area's keys: tests/fs/fuse_writes_test.sh ("ok   writes_...").
for k in writes_dir writes_local writes_persist writes_settle_ms writes_stall_ms; do
  grep -q -- "--${k//_/-}" "$SRC_DIR/tests/fs/fuse_writes_test.sh" && probed+=("$k")
done

# Every key of `clairfsd --help` (not the sampler's own options) has a probe.
mapfile -t keys < <("$BIN/clairfsd" --help | sed -n 's/^  --\([a-z][a-z-]*\) .*/\1/p' | tr - _ | sort -u)
((${#keys[@]} >= 30)) || fail "read only ${#keys[@]} keys from clairfsd --help"
missing=()
for k in "${keys[@]}"; do
  [[ " ${probed[*]} " == *" $k "* ]] || missing+=("$k")
done
((${#missing[@]} == 0)) || fail "keys with no probe: ${missing[*]}"
echo "PASS: all ${#keys[@]} keys of clairfsd --help change what the daemon does"
