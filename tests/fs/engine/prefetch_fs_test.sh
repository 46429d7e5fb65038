#!/bin/bash
# The clairvoyant prefetcher through a real mount: a generated ImageFolder tree,
# clairfsd configured for torch-distributed (world 2, both ranks on this node,
# 2 loader workers, batch 8, seed 5, 2 epochs), and two reader processes that
# replay ranks 0 and 1 with the real torch DistributedSampler at a fixed rate,
# kept in step by a shared schedule as DDP keeps real ranks in step (the
# planner does not model ranks drifting apart by more than its budget's lead).
# Checks: every byte right; after the first loader window >= 99% of opens
# found their file ready; the prefetcher's RAM never exceeded its budget; a
# reader with another seed still reads correct bytes and shows deviations.
# Opens reach the prefetcher through inotify (the default; the mount declines
# them), then once more through OPEN requests (prefetch_opens: fuse).
source "${CLAIRFS_SRC:?}/tests/fs/fuse_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

"$PY" -c 'import torch, torchvision' 2>/dev/null || skip "$PY cannot import torch and torchvision"

# 8 classes x 40 images of 4-64 KiB random bytes, plus files outside the root.
"$PY" - "$WORK/src" <<'PYEOF'
import os, random, sys
root = sys.argv[1]
rng = random.Random(77)
for c in range(8):
    d = os.path.join(root, "train", "class%02d" % c)
    os.makedirs(d, exist_ok=True)
    for i in range(40):
        with open(os.path.join(d, "img%03d.jpg" % i), "wb") as f:
            f.write(rng.randbytes(rng.randint(4096, 65536)))
os.makedirs(os.path.join(root, "val"), exist_ok=True)
with open(os.path.join(root, "val", "v.jpg"), "wb") as f:
    f.write(rng.randbytes(1000))
with open(os.path.join(root, "README"), "wb") as f:
    f.write(b"not part of the dataset\n")
PYEOF
pack "$WORK/src" "$WORK/out" --partitions 2

# The budget the daemon recommends for this job (the loaders' window of 80
# files plus a lead; below it, it warns that files will wait for room), still
# well under the 11 MB of data, so files are evicted and fetched again. A
# tighter budget leaves the prefetcher a lead of a few tens of milliseconds
# over these fixed-rate readers, which a loaded CI host can swallow.
BUDGET=$((6 * 1024 * 1024))
PREFETCH_ARGS=(--ram-cache "$BUDGET"
  --prefetch-sampler torch-distributed --prefetch-root train --prefetch-seed 5
  --prefetch-epochs 2 --prefetch-world-size 2 --prefetch-workers 2 --prefetch-batch-size 8
  --prefetch-threads 2)
wait_log() {  # wait_log LOG PATTERN: the daemon logged PATTERN within 5 s
  local i
  for i in $(seq 1 50); do grep -q "$2" "$1" && return 0; sleep 0.1; done
  cat "$1"
  fail "the daemon did not log: $2"
}
# Default: opens reach the prefetcher through inotify, the mount declines them.
mount_dataset "$WORK/out" "$WORK/mnt" "$WORK/daemon.log" "${PREFETCH_ARGS[@]}"
wait_log "$WORK/daemon.log" "opens seen through inotify on 8 directories"
grep -q 'local ranks \[0,1\]' "$WORK/daemon.log" || { cat "$WORK/daemon.log"; fail "local ranks not 0,1"; }
! grep -q "files will wait for room" "$WORK/daemon.log" \
  || { cat "$WORK/daemon.log"; fail "the budget is below the one the daemon recommends"; }

# Budget sampler: stats.json every 50 ms while the readers run.
( while [ ! -e "$WORK/stop" ]; do cat "$WORK/mnt/.clairfs/stats.json" >>"$WORK/samples" 2>/dev/null
    echo '@@' >>"$WORK/samples"; sleep 0.05; done ) &
SAMPLER=$!

# The readers' pace: a batch per rank every 20 ms, 800 files/s in all. A
# daemon built with a sanitizer (scripts/test.sh --sanitize sets
# CLAIRFS_SANITIZE) does the same work several times slower, so there they go
# 3x slower, which leaves its prefetcher the lead the plain build has (at
# 20 ms, ThreadSanitizer on a loaded CI host once left 11 of 320 opens in
# epoch 1 a few microseconds short).
INTERVAL=0.02
[[ -z ${CLAIRFS_SANITIZE:-} ]] || INTERVAL=0.06
MNT=$WORK/mnt
replay() {  # replay SEED TAG [reader options]: both ranks read $MNT
  local r pids=() seed=$1 tag=$2
  shift 2
  mkdir -p "$WORK/barrier.$tag"
  for r in 0 1; do
    "$PY" "$HERE/replay_reader.py" "$MNT/train" "$WORK/src/train" --rank $r --world 2 \
      --seed "$seed" --epochs 2 --workers 2 --batch 8 --interval "$INTERVAL" \
      --barrier "$WORK/barrier.$tag" --out "$WORK/$tag.$r.json" "$@" &
    pids+=($!)
  done
  local ok=0
  for r in "${pids[@]}"; do wait "$r" || ok=1; done
  cat "$WORK/$tag.0.json" "$WORK/$tag.1.json" 2>/dev/null || true
  [ $ok = 0 ] || fail "a $tag reader read wrong bytes or failed"
}

replay 5 exact
cp "$WORK/mnt/.clairfs/stats.json" "$WORK/stats.exact.json"
replay 6 deviating
touch "$WORK/stop"
wait "$SAMPLER" || true
cp "$WORK/mnt/.clairfs/stats.json" "$WORK/stats.deviating.json"

"$PY" - "$WORK" "$BUDGET" <<'PYEOF' || { cat "$WORK/daemon.log"; cat "$WORK/stats.exact.json"; fail "stats check failed"; }
import json, sys
work, budget = sys.argv[1], int(sys.argv[2])
exact = json.load(open(work + "/stats.exact.json"))
e, cache = exact["prefetch"], exact["ram_cache"]
deviating = json.load(open(work + "/stats.deviating.json"))
d = deviating["prefetch"]
window = 2 * 2 * 2 * 8  # ranks x workers x prefetch_factor x batch: the loader's own read-ahead
opens, ready = e["opens"], e["ready"]
print("exact run: opens %d ready %d (page cache %d, ram %d) stalls %d waits %d wait %.1f ms "
      "deviations %d lead %d files peak %d of %d bytes, pushes %d, unknown inode %d, late pushes %d"
      % (opens, ready, e["open_hits"]["page_cache"], e["open_hits"]["ram"], e["stalls"],
         e["waits"], e["wait_ns"] / 1e6, e["deviations"], e["lead_files"],
         e["peak_used_bytes"], e["budget_bytes"], e["page_cache"]["pushes"],
         e["page_cache"]["unknown_inode"], e["page_cache"]["late_pushes"]))
assert opens == 2 * 2 * 160, "expected 640 dataset opens, saw %d" % opens
per = e["per_epoch"]
assert [p["epoch"] for p in per] == [0, 1] and sum(p["opens"] for p in per) == opens, per
assert per[1]["ready"] == per[1]["opens"] and per[1]["stalls"] == 0, per
assert opens - ready <= 0.01 * (opens - window), "too few ready opens after the first window"
assert e["predicted"] >= opens - window, e
# One budget: the RAM cache holds only what the planner counts.
assert e["peak_used_bytes"] <= budget and cache["capacity_bytes"] == budget, (e, cache)
assert cache["kept_by"] == "planner" and deviating["ram_cache"]["peak_bytes"] <= budget, cache
assert e["budget_bytes"] == budget, e
assert e["evictions"] > 0, "a 6 MiB budget over 11 MB of data must evict"
print("deviating run: opens %d deviations %d resyncs %d lost %s"
      % (d["opens"], d["deviations"], d["resyncs"], d["lost"]))
assert d["opens"] == 2 * opens, d
assert d["deviations"] > e["deviations"] + 20, d
assert d["peak_used_bytes"] <= budget, d
# Every sample taken during the runs stayed within the budget.
n = 0
for chunk in open(work + "/samples").read().split("@@"):
    chunk = chunk.strip()
    if not chunk:
        continue
    try:
        sample = json.loads(chunk)
    except ValueError:
        continue
    n += 1
    p = sample["prefetch"]
    assert p["used_bytes"] <= budget and sample["ram_cache"]["bytes"] <= budget, sample
print("budget held in %d samples" % n)
PYEOF
# Another seed than the configured one: when a resync found no position (the
# planner lost the order), the daemon's log says so once, with what to check.
want=$("$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))["prefetch"]; print(int(d["resync_attempts"] > d["resyncs"]))' "$WORK/stats.deviating.json")
n_lost=$(grep -c "prefetch: the opens stopped following the predicted order (.*The prefetch settings may not match the training script" "$WORK/daemon.log" || true)
echo "deviating run: a resync failed: $want, warnings logged: $n_lost"
[[ $n_lost -eq $want ]] || { grep prefetch "$WORK/daemon.log"; fail "the lost planner's warning logged $n_lost times, want $want"; }

# The same exact run with opens answered by the daemon (prefetch_opens: fuse):
# every open is an OPEN request, and the prefetcher sees each one before it
# is answered.
fusermount3 -u "$WORK/mnt"
wait "$DAEMON_PID" || fail "clairfsd did not exit cleanly"
mount_dataset "$WORK/out" "$WORK/mnt-fuse" "$WORK/daemon-fuse.log" "${PREFETCH_ARGS[@]}" \
  --prefetch-opens fuse
wait_log "$WORK/daemon-fuse.log" "no_open forced to false"
MNT=$WORK/mnt-fuse
replay 5 fuse
cp "$WORK/mnt-fuse/.clairfs/stats.json" "$WORK/stats.fuse.json"
"$PY" - "$WORK/stats.fuse.json" <<'PYEOF' || { cat "$WORK/stats.fuse.json"; fail "fuse-opens check failed"; }
import json, sys
s = json.load(open(sys.argv[1]))
e, requests = s["prefetch"], s["requests"]
window = 2 * 2 * 2 * 8
print("fuse opens: OPEN requests %d, opens %d, ready %d" % (requests["open"], e["opens"], e["ready"]))
assert requests["open"] >= 640 and e["opens"] == 640, (requests, e)
assert e["opens"] - e["ready"] <= 0.01 * (e["opens"] - window), e
PYEOF

# A node-shared stream: both processes read the whole of one order (rank 0 of
# a one-rank sampler, given as an order file of one rank; the job has 2
# training processes, so each file is read twice). Each file is fetched once
# and kept until its second reader has opened it.
fusermount3 -u "$WORK/mnt-fuse"
wait "$DAEMON_PID" || fail "clairfsd did not exit cleanly"
"$CLAIRFS_BIN/clairfs-order" --sampler torch-distributed --root "$WORK/src/train" --seed 7 \
  --world-size 1 --epochs 2 >"$WORK/shared.paths" || fail "clairfs-order"
{ echo "# clairfs-order v1"; echo "# world-size 1"
  for e in 0 1; do echo "# epoch $e rank 0"; sed -n "$((e * 320 + 1)),$(((e + 1) * 320))p" "$WORK/shared.paths"; done
} >"$WORK/shared.order"
mount_dataset "$WORK/out" "$WORK/mnt-shared" "$WORK/daemon-shared.log" --ram-cache "$BUDGET" \
  --prefetch-sampler order-file --prefetch-order-file "$WORK/shared.order" --prefetch-root train \
  --prefetch-epochs 2 --prefetch-world-size 2 --prefetch-workers 2 --prefetch-batch-size 8 \
  --prefetch-threads 2
wait_log "$WORK/daemon-shared.log" "local readers of one shared stream \[0,0\]"
MNT=$WORK/mnt-shared
replay 7 shared --stream-world 1 --stream-rank 0
cp "$WORK/mnt-shared/.clairfs/stats.json" "$WORK/stats.shared.json"
"$PY" - "$WORK/stats.shared.json" "$BUDGET" "$WORK"/shared.?.json <<'PYEOF' || { cat "$WORK/stats.shared.json"; fail "shared-stream check failed"; }
import json, sys
e, budget = json.load(open(sys.argv[1]))["prefetch"], int(sys.argv[2])
readers = [json.load(open(f)) for f in sys.argv[3:]]
# Before the prefetcher is ahead, both readers' loaders open the first
# window's files at once: those count as the cold start.
window = 2 * (2 * 2 * 2 * 8)
print("shared stream: opens seen %d ready %d deviations %d fetched %d peak %d of %d"
      % (e["opens"], e["ready"], e["deviations"], e["fetched"], e["peak_used_bytes"], budget))
assert [r["opened"] for r in readers] == [2 * 320, 2 * 320], readers
# inotify merges two identical events queued back to back (both readers
# opening one file at once), so not every open is seen; each one seen counts.
assert 2 * 320 <= e["opens"] <= 2 * 2 * 320, e
assert e["opens"] - e["ready"] <= 0.01 * (e["opens"] - window), e
assert e["deviations"] == 0 and e["peak_used_bytes"] <= budget, e
# Fetched once per epoch for both readers, not once per reader.
assert e["fetched"] <= 2 * 320 + 32, e
PYEOF

# Settings that do not fit the dataset (here an order file that is not there)
# cost the predictions, never a read: one warning, stats.json says why, every
# byte still served.
fusermount3 -u "$WORK/mnt-shared"
wait "$DAEMON_PID" || fail "clairfsd did not exit cleanly"
mount_dataset "$WORK/out" "$WORK/mnt-bad" "$WORK/daemon-bad.log" --ram-cache 64M \
  --prefetch-sampler order-file --prefetch-order-file "$WORK/no-such-order-file"
diff -r "$WORK/src" "$WORK/mnt-bad" >/dev/null || fail "a prefetch mismatch changed what is served"
[[ $(grep -c "settings do not fit the dataset" "$WORK/daemon-bad.log") -eq 1 ]] \
  || { cat "$WORK/daemon-bad.log"; fail "the mismatch was not logged exactly once"; }
"$PY" - "$WORK/mnt-bad/.clairfs/stats.json" <<'PYEOF' || fail "stats.json does not report the mismatch"
import json, sys
p = json.load(open(sys.argv[1]))["prefetch"]
assert p["enabled"] is False and "no-such-order-file" in p["reason"], p
PYEOF
summary=$("$BIN/clairfs-summary" "$WORK/mnt-bad/.clairfs/stats.json")
[[ $summary == *"prefetching off: the prefetch settings do not fit the dataset ("*no-such-order-file* ]] \
  || fail "clairfs-summary does not say why prefetching is off: $summary"

# The same without a report channel: nothing needs the opens, so the mount
# declines them again (one OPEN request, declined, then the kernel's own).
fusermount3 -u "$WORK/mnt-bad"
wait "$DAEMON_PID" || fail "clairfsd did not exit cleanly"
mount_dataset "$WORK/out" "$WORK/mnt-bad" "$WORK/daemon-bad2.log" --ram-cache 64M \
  --prefetch-sampler order-file --prefetch-order-file "$WORK/no-such-order-file" --report false
grep -q "prefetch off: the mount declines opens again" "$WORK/daemon-bad2.log" \
  || { cat "$WORK/daemon-bad2.log"; fail "opens not declined with prefetching off"; }
diff -r "$WORK/src" "$WORK/mnt-bad" >/dev/null || fail "declined opens changed what is served"
"$PY" - "$WORK/mnt-bad/.clairfs/stats.json" <<'PYEOF' || fail "opens reached the daemon with prefetching off"
import json, sys
s = json.load(open(sys.argv[1]))
print("prefetch off, no report: OPEN requests %d for 322 files" % s["requests"]["open"])
assert s["requests"]["open"] <= 1, s["requests"]
PYEOF

# An order file of paths needs no other setting, whatever the files are
# (here the root's README and a file of val/, which no ImageFolder over the
# root takes): the daemon predicts them.
fusermount3 -u "$WORK/mnt-bad"
wait "$DAEMON_PID" || fail "clairfsd did not exit cleanly"
printf '# clairfs-order v1\n# epoch 0 rank 0\nREADME\nval/v.jpg\ntrain/class03/img007.jpg\n' \
  >"$WORK/any.order"
mount_dataset "$WORK/out" "$WORK/mnt-any" "$WORK/daemon-any.log" --ram-cache 64M \
  --prefetch-sampler order-file --prefetch-order-file "$WORK/any.order"
wait_log "$WORK/daemon-any.log" "prefetch: order-file over 3 files"
cat "$WORK/mnt-any/README" "$WORK/mnt-any/val/v.jpg" "$WORK/mnt-any/train/class03/img007.jpg" \
  | cmp - <(cat "$WORK/src/README" "$WORK/src/val/v.jpg" "$WORK/src/train/class03/img007.jpg") \
  || fail "the order file's files read wrong"
"$PY" - "$WORK/mnt-any/.clairfs/stats.json" <<'PYEOF' || fail "the order file's opens were not followed"
import json, sys, time
for _ in range(50):  # inotify's events arrive a moment after the opens
    p = json.load(open(sys.argv[1]))["prefetch"]
    if p["opens"] >= 3:
        break
    time.sleep(0.1)
assert p["enabled"] is True and p["opens"] == 3 and p["deviations"] == 0, p
PYEOF
echo "PASS: prefetch through the mount"
