#!/usr/bin/env bash
# The data faults of the matrix at 4 ranks (the 1-rank column is
# tests/fs/fuse_faults_test.sh; ranks that die or stop are
# fault_matrix_test.sh). Each may cost the reads it touches - as EIO or a
# slower path - never a wrong byte or a hang, and the ranks serve the rest:
#
#   damaged  rank 1's staged packs get a flipped byte in every file after
#            staging verified them: rank 1 reads them itself and answers its
#            peers with them; every mount must still read as the source
#            (the bytes are read again from the dataset directory)
#   full     rank 1's local disk is a 512 KiB tmpfs, so staging fails there;
#            then the dataset directory vanishes (renamed away). Replicas 2:
#            every partition has another staged copy, every mount reads as
#            the source. Replicas 1: rank 1's unstaged partitions read as EIO
#            on every mount (named in the log), every other file right
#   readers  8 readers of a 24 MiB file, 2 per mount (so 6 read from a peer)
#            SIGKILLed while their reads are in flight: every mount still
#            right afterwards
#   dataset  the dataset's own packs damaged: one truncated, one with a byte
#            flipped in the middle. Staging refuses both (named in the log);
#            on every mount the damaged files read as EIO and every other
#            file right. A manifest with a byte flipped: every rank exits
#            non-zero within the start bound, the log names the manifest
#   unmount  rank 1's mount unmounted under it (fusermount3 -u -z): it ends,
#            the others keep serving (its partitions from the shared packs),
#            and the job ends on SIGTERM within the shutdown bound
set -uo pipefail
BIN=$CLAIRFS_BIN
RANK=$CLAIRFS_SRC/tests/fs/dist/rank.sh  # see there: keeps survivors alive under hydra
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" faults-data
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (a small tmpfs for the full disk)"; exit 77; }
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

SHUTDOWN_MS=2000
BOUND_S=$((2 * SHUTDOWN_MS / 1000 + 10))  # as fault_matrix_test.sh: peers + finalize + slack
$PY "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$T/src" --small 400 --no-links >/dev/null || exit 1
mkdir -p "$T/src/big"
$PY -c "import os,sys; open(sys.argv[1],'wb').write(os.urandom(24 << 20))" "$T/src/big/huge.bin"
mkdir -p "$T/tiny"
mount -t tmpfs -o size=512k tmpfs "$T/tiny"
trap 'cleanup; umount -l "$T/tiny" 2>/dev/null' EXIT

# start REPLICAS [DATASET]: packs (zstd, 64 KiB frames) and launches 4 ranks;
# rank 1 stages onto $T/ssd1, which the full-disk case mounts over.
start() {
  local k=$1 out=${2:-$T/out}
  rm -rf "$out" "$T"/ssd[023] "$T/log"; mkdir -p "$T"/mnt{0,1,2,3} "$T/ssd1"
  rm -rf "${T:?}"/ssd1/*  # a directory, or the tmpfs mounted over it
  "$BIN/clairfs-partition" pack "$T/src" "$out" --partitions 8 --replicas "$k" \
    --compress zstd --frame-size 65536 >/dev/null 2>&1 || { fail "pack"; exit 1; }
  "$MPIEXEC" -disable-auto-cleanup -n 4 "$RANK" "$BIN/clairfsd" --dataset "$out" \
    --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --peer-timeout-ms 1000 \
    --shutdown-wait-ms $SHUTDOWN_MS >"$T/log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet || { fail "mounts not ready"; cat "$T/log"; exit 1; }
  wait_staged
}
wait_staged() {  # until every rank's staging has finished (or 30 s)
  local r i
  for r in 0 1 2 3; do
    for ((i = 0; i < 300; i++)); do
      [[ $(json "$T/mnt$r/.clairfs/stats.json" 'd["cluster"]["staging"]["finished"]' 2>/dev/null) == True ]] && break
      sleep 0.1
    done
  done
}
stop() {
  kill -TERM "$launcher"
  timeout $BOUND_S tail --pid="$launcher" -f /dev/null || fail "$1: the job did not end within $BOUND_S s"
  wait "$launcher"; local rc=$?; launcher=""
  grep -q " $T/mnt" /proc/mounts && { fail "$1: mounts left behind"; for m in "$T"/mnt*; do fusermount3 -u -z "$m" 2>/dev/null; done; }
  return $rc
}
same() {  # same WHAT RANK...: each rank's mount reads as the source (never a hang)
  local what=$1 r
  shift
  for r in "$@"; do
    timeout 120 diff -r "$T/src" "$T/mnt$r" >"$T/diff" 2>&1 && pass "$what: rank $r mount reads as the source" \
      || { fail "$what: rank $r mount differs or hangs"; head -5 "$T/diff"; }
  done
}
stat_of() { json "$T/mnt$1/.clairfs/stats.json" "$2"; }

# eio_or_same WHAT: on every mount, some files read as EIO and every other
# file as the source (never a hang).
eio_or_same() {
  local what=$1 r bad other
  for r in 0 1 2 3; do
    # Per file (names may hold line breaks): same bytes, EIO, or anything else.
    read -r bad other < <(timeout 120 $PY - "$T/src" "$T/mnt$r" <<'EOF'
import errno, os, sys
src, mnt = sys.argv[1], sys.argv[2]
eio = other = 0
for d, _, files in os.walk(src):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), src)
        try:
            with open(os.path.join(mnt, rel), "rb") as got, open(os.path.join(src, rel), "rb") as want:
                other += got.read() != want.read()
        except OSError as e:
            eio += e.errno == errno.EIO
            other += e.errno != errno.EIO
print(eio, other)
EOF
)
    [[ ${bad:-0} -gt 0 && ${other:-1} -eq 0 ]] && pass "$what: rank $r: $bad files EIO, every other file right" \
      || fail "$what: rank $r: ${bad:-?} EIO, ${other:-?} other differences (or a hang)"
  done
}

# --- damaged: a flipped byte in every file of rank 1's staged packs.
start 1
$PY - "$T/ssd1" <<'EOF' || fail "damaged: could not flip the staged copies"
# One byte in every 4 KiB of each staged pack after its 32-byte header: a
# flip in nearly every payload (a file's checksum covers it, or its frame's).
import os, sys
flipped = 0
for name in sorted(os.listdir(sys.argv[1])):
    path = os.path.join(sys.argv[1], name)
    with open(path, "r+b") as pack:
        for at in range(32 + 2048, os.path.getsize(path), 4096):
            pack.seek(at)
            b = pack.read(1)
            pack.seek(at)
            pack.write(bytes([b[0] ^ 0x20]))
            flipped += 1
sys.exit(0 if flipped else 1)
EOF
same "damaged" 0 1 2 3
for r in 0 1 2; do
  n=$(stat_of $r 'd["cluster"]["damaged_rereads"]')
  [[ $n -gt 0 ]] && pass "damaged: rank $r read $n damaged payloads again from the dataset" \
    || fail "damaged: rank $r counted no damaged reads (peer answers from rank 1)"
done
grep -q "failed their checksum; reading them again from the dataset directory" "$T/log" \
  && pass "damaged: the log names it" || fail "damaged: nothing in the log"
stop damaged || fail "damaged: job exit code"

# --- full: staging fails on rank 1, then the dataset directory vanishes.
for k in 2 1; do
  what="full/replicas $k"
  mount --bind "$T/tiny" "$T/ssd1" || fail "$what: cannot mount the small disk"
  start $k "$T/out$k"
  grep -q "No space left on device" "$T/log" && pass "$what: rank 1's staging ran out of space" \
    || fail "$what: staging did not fail on the 512 KiB disk"
  mv "$T/out$k" "$T/out$k-gone"
  if [[ $k == 2 ]]; then
    same "$what" 0 1 2 3
  else
    # Rank 1's partitions (1 and 5) that did not fit have no copy left.
    lost=$(grep -o "staging part-0000[15] failed" "$T/log" | grep -o "part-0000[15]" | sort -u)
    [[ -n $lost ]] && pass "$what: the log names the pack that failed: $lost" \
      || fail "$what: no staging failure of rank 1's partitions in the log"
    eio_or_same "$what"
  fi
  stop "$what" || fail "$what: job exit code"
  umount "$T/ssd1" 2>/dev/null || umount -l "$T/ssd1"
  mv "$T/out$k-gone" "$T/out$k"
done

# --- readers: killed with requests in flight, on a file homed on another rank.
start 1
pids=()
for r in 0 1 2 3 0 1 2 3; do  # three of the four mounts read it from its home rank
  $PY -c "import sys; open(sys.argv[1],'rb').read()" "$T/mnt$r/big/huge.bin" &
  pids+=($!)
done
sleep 0.3
kill -KILL "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
same "readers" 0 1 2 3
stop readers || fail "readers: job exit code"

# --- dataset: a truncated pack and a pack with a flipped byte in the dataset.
launch_damaged() {  # packs into $T/out, lets DAMAGE (a command) harm it, launches
  rm -rf "$T/out" "$T"/ssd* "$T/log"; mkdir -p "$T"/mnt{0,1,2,3} "$T/ssd1"
  "$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 8 --compress zstd \
    --frame-size 65536 >/dev/null 2>&1 || { fail "pack"; exit 1; }
  "$@"
  "$MPIEXEC" -disable-auto-cleanup -n 4 "$RANK" "$BIN/clairfsd" --dataset "$T/out" \
    --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --peer-timeout-ms 1000 \
    --shutdown-wait-ms $SHUTDOWN_MS --start-timeout-ms 6000 >"$T/log" 2>&1 &
  launcher=$!
}
harm_packs() {
  truncate -s 100000 "$T/out/part-00003"
  $PY -c "import sys; f=open(sys.argv[1],'r+b'); f.seek(300000); b=f.read(1); f.seek(300000); f.write(bytes([b[0]^1]))" "$T/out/part-00006"
}
launch_damaged harm_packs
"$BIN/clairfs-wait" "$T"/mnt{0,1,2,3} --timeout 60 --quiet || { fail "dataset: mounts not ready"; cat "$T/log"; }
wait_staged
for pk in part-00003 part-00006; do
  grep -q "staging $pk failed" "$T/log" && pass "dataset: staging refused the damaged $pk, named in the log" \
    || fail "dataset: no staging error naming $pk"
done
eio_or_same "dataset"
stop dataset || fail "dataset: job exit code"

harm_manifest() {
  $PY -c "import os,sys; f=open(sys.argv[1],'r+b'); n=os.path.getsize(sys.argv[1]); f.seek(n//2); b=f.read(1); f.seek(n//2); f.write(bytes([b[0]^1]))" "$T/out/manifest"
}
launch_damaged harm_manifest
if timeout 30 tail --pid="$launcher" -f /dev/null; then
  wait "$launcher"; rc=$?; launcher=""
  [[ $rc -ne 0 ]] && pass "manifest: the job ended by itself, exit $rc" || fail "manifest: exit 0"
  [[ $(grep -c "manifest" "$T/log") -ge 1 ]] && pass "manifest: the log names the manifest" \
    || { fail "manifest: the log does not name it"; tail -5 "$T/log"; }
  grep -q " $T/mnt" /proc/mounts && fail "manifest: a mount was left"
else
  fail "manifest: the job still runs after 30 s"; tail -5 "$T/log"
fi

# --- unmount: one rank's mount point unmounted under it.
start 1
v=$(stat_of 1 'd["cluster"]["pid"]')
fusermount3 -u -z "$T/mnt1"
timeout $BOUND_S tail --pid="$v" -f /dev/null && pass "unmount: rank 1 ended" \
  || fail "unmount: rank 1 still runs after $BOUND_S s"
same "unmount" 0 2 3
stop unmount
grep -q "unmounted" "$T/log" && pass "unmount: the job ended" || fail "unmount: no unmount in the log"

echo "$failures failures"
[[ $failures -eq 0 ]]
