#!/bin/bash
# The writable area through a real mount (docs/fuse.md, "Writing through the
# mount"): the ways libraries write (tempfile + fsync + rename + chmod, a zip
# written by seeking back, appends, writes at random offsets, truncation,
# directories made, renamed and removed) give the same tree as on a local
# directory; the dataset stays read-only; persist equals the area after the
# unmount; a later run sees it; fsync means durable; a killed daemon's
# undrained files are drained by the next; a persist that fails is reported.
# Probes the writes_* keys for config_keys_test.sh.
source "$(dirname "$0")/fuse_lib.sh"

mkdir -p "$WORK/src/data"
for i in 1 2 3; do head -c 3000 /dev/urandom >"$WORK/src/data/f$i"; done
pack "$WORK/src" "$WORK/out" --partitions 1

unmount() {  # unmount MNT: and wait for the daemon (its exit code)
  fusermount3 -u "$1"
  local rc=0
  wait "$DAEMON_PID" || rc=$?
  return $rc
}
st() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1] + "/.clairfs/stats.json")); print(eval(sys.argv[2]))' "$MNT" "$1"; }

# The same changes applied to a directory; run on the area and on a plain
# local directory, the trees must be equal.
cat >"$WORK/writer.py" <<'PYEOF'
import os, random, sys, tempfile, zipfile
root = sys.argv[1]
os.chdir(root)
rng = random.Random(7)
os.makedirs("ckpt/epoch_1", exist_ok=True)
# torch.save / safetensors: a temporary file, fsync, chmod, rename over the old one.
for step in range(3):
    fd, tmp = tempfile.mkstemp(dir="ckpt", prefix=".tmp")
    os.write(fd, bytes(rng.getrandbits(8) for _ in range(200000 + step)))
    os.fsync(fd)
    os.close(fd)
    os.chmod(tmp, 0o644)
    os.replace(tmp, "ckpt/model.pt")
# Keras 3's .keras: a zip whose headers are written by seeking back.
with zipfile.ZipFile("ckpt/model.keras", "w", zipfile.ZIP_DEFLATED) as z:
    when = (2020, 1, 1, 0, 0, 0)  # the same bytes on both runs
    z.writestr(zipfile.ZipInfo("config.json", when), '{"layers": 3}' * 100)
    z.writestr(zipfile.ZipInfo("model.weights.h5", when),
               bytes(rng.getrandbits(8) for _ in range(150000)))
with zipfile.ZipFile("ckpt/model.keras") as z:
    assert z.testzip() is None
# An HDF5-like file: fixed size, updated in place at random offsets.
with open("ckpt/epoch_1/weights.h5", "wb") as f:
    f.truncate(1 << 20)
with open("ckpt/epoch_1/weights.h5", "r+b") as f:
    for _ in range(200):
        f.seek(rng.randrange(1 << 20))
        f.write(bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 5000))))
# A log appended by several opens.
for epoch in range(5):
    with open("train.log", "a") as f:
        f.write(f"epoch {epoch} loss {1.0 / (epoch + 1):.4f}\n")
# Truncated, renamed, removed.
with open("scratch.bin", "wb") as f:
    f.write(b"x" * 10000)
os.truncate("scratch.bin", 1234)
os.rename("ckpt/epoch_1", "ckpt/epoch_best")
os.makedirs("tmp/a/b")
open("tmp/a/b/junk", "w").close()
os.remove("tmp/a/b/junk")
os.removedirs("tmp/a/b")
os.chmod("train.log", 0o600)
print("ok")
PYEOF

# --- writes_dir, writes_local, writes_persist: the area, local first, then persist.
MNT=$WORK/mnt LOG=$WORK/d1.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs \
  --writes-local "$WORK/local" --writes-persist "$WORK/persist"
mkdir -p "$WORK/reference"
"$PY" "$WORK/writer.py" "$WORK/reference" >/dev/null
"$PY" "$WORK/writer.py" "$MNT/outputs" >/dev/null || fail "the writer failed on the area"
diff -r "$WORK/reference" "$MNT/outputs" || fail "the area differs from the same writes on a local directory"
[[ $(stat -c %a "$MNT/outputs/train.log") == 600 ]] || fail "chmod did not hold"
[[ -f $WORK/local/tree/ckpt/model.keras ]] || fail "writes_local: the bytes are not in $WORK/local"
echo "ok   writes_dir, writes_local: library-style writes give the local directory's tree"

# A file created write-only is written past the mount's page cache (direct_io);
# one created read-write goes through it (it may be mapped). Either way other
# descriptors of the file see every write at once.
"$PY" - "$MNT/outputs" <<'PYEOF' || fail "write-only and read-write creates"
import mmap, os, subprocess, sys
root = sys.argv[1]
def resident(path):  # the mount's cached pages of the file (fincore)
    out = subprocess.run(["fincore", "--raw", "--noheadings", "--output", "PAGES", path],
                         check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])
data = os.urandom(4 << 20)
for name, flags in (("wo.bin", os.O_WRONLY), ("rw.bin", os.O_RDWR)):
    p = os.path.join(root, name)
    w = os.open(p, flags | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(w, data[: 1 << 20])
    r = os.open(p, os.O_RDONLY)
    assert os.pread(r, 4096, 0) == data[:4096]  # cached by this reader now
    os.pwrite(w, data[(1 << 20):(1 << 20) + 4096], 0)  # overwrites what r cached
    assert os.pread(r, 4096, 0) == data[(1 << 20):(1 << 20) + 4096], name + ": a stale read"
    os.pwrite(w, data[2 << 20:], 2 << 20)  # past the end: a hole between
    m = mmap.mmap(r, 0, prot=mmap.PROT_READ)
    assert m[(2 << 20) - 1] == 0 and m[2 << 20:] == data[2 << 20:], name + ": the mapping"
    os.pwrite(w, b"Z" * 10, 5)
    assert m[5:15] == b"Z" * 10, name + ": the mapping missed a write"
    m.close()
    os.close(r)
    os.close(w)
    a = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(a, b"tail")
    os.close(a)
    want = bytearray(data[(1 << 20):(1 << 20) + 4096] + data[4096:1 << 20])
    want[5:15] = b"Z" * 10
    want += bytes((2 << 20) - len(want)) + data[2 << 20:] + b"tail"
    assert open(p, "rb").read() == want, name + ": wrong bytes"
    print(name, "resident pages after its writes:", resident(p))
# Whether a create's writes went into the mount's page cache: a reader maps
# the empty file first (ctypes: Python's mmap would stat it, and a stat drops
# the cache as the mtime changed), then mincore counts the pages the writes
# left there. Write-only: none of the 4 MiB; read-write: all of it.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
def cached_by_writes(name, flags):
    p = os.path.join(root, name)
    w = os.open(p, flags | os.O_CREAT | os.O_EXCL, 0o644)
    r = os.open(p, os.O_RDONLY)
    addr = libc.mmap(None, len(data), mmap.PROT_READ, mmap.MAP_SHARED, r, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    os.write(w, data)
    vec = ctypes.create_string_buffer(len(data) // mmap.PAGESIZE)
    assert libc.mincore(addr, len(data), vec) == 0, os.strerror(ctypes.get_errno())
    os.close(w)
    os.close(r)
    assert open(p, "rb").read() == data, name + ": wrong bytes"
    return sum(b & 1 for b in vec.raw)
pages = len(data) // mmap.PAGESIZE
wo, rw = cached_by_writes("wo-only.bin", os.O_WRONLY), cached_by_writes("rw-only.bin", os.O_RDWR)
print("pages cached by 4 MiB of writes: write-only create %d, read-write create %d of %d"
      % (wo, rw, pages))
assert wo == 0, "a write-only create's writes went through the page cache"
assert rw == pages, "a read-write create's writes did not go through the page cache"
for name in ("wo.bin", "rw.bin", "wo-only.bin", "rw-only.bin"):
    os.unlink(os.path.join(root, name))
PYEOF
echo "ok   a write-only create skips the mount's page cache; readers and mappings see its writes"

# Random changes through the mount and on a local directory, compared after
# every step (names, types, sizes, bytes, errnos).
"$PY" - "$MNT/outputs/random" "$WORK/model-random" <<'PYEOF' || fail "random changes: the mount and a local directory disagree"
import errno, os, random, sys
area, model = sys.argv[1], sys.argv[2]
os.makedirs(area)
os.makedirs(model)
rng = random.Random(11)
names = ["a", "b", "c"]
def rand_path():
    return "/".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
def apply(root, op, p, q, data, off, size):
    a, b = os.path.join(root, p), os.path.join(root, q)
    try:
        if op == "mkdir": os.mkdir(a)
        elif op == "write":
            fd = os.open(a, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, data, off)
            finally:
                os.close(fd)
        elif op == "truncate": os.truncate(a, size)
        elif op == "unlink": os.unlink(a)
        elif op == "rmdir": os.rmdir(a)
        elif op == "rename": os.rename(a, b)
        elif op == "fsync":
            fd = os.open(a, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs:
            out[os.path.relpath(os.path.join(d, n), root)] = "dir"
        for n in files:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out
for step in range(400):
    op = rng.choice(["mkdir", "write", "write", "truncate", "unlink", "rmdir", "rename", "rename", "fsync"])
    p, q = rand_path(), rand_path()
    data = bytes([rng.randrange(256)]) * rng.randint(1, 70000)
    off, size = rng.randrange(100000), rng.randrange(100000)
    got, want = apply(area, op, p, q, data, off, size), apply(model, op, p, q, data, off, size)
    if got != want:
        sys.exit("step %d %s %s %s: mount %s, local %s" % (step, op, p, q, got, want))
    if tree(area) != tree(model):
        sys.exit("step %d %s %s %s: the trees differ" % (step, op, p, q))
print("400 random steps agree")
PYEOF
rm -rf "$MNT/outputs/random"
[[ -e $MNT/outputs/random ]] && fail "rm -rf of a directory in the area left it"
echo "ok   400 random changes through the mount agree with a local directory after every step"

# The dataset stays read-only, the area has no links, and nothing crosses.
touch "$MNT/data/new" 2>/dev/null && fail "created a file in the dataset"
echo x >>"$MNT/data/f1" 2>/dev/null && fail "appended to a dataset file"
out=$("$PY" - "$MNT" <<'PYEOF'
import errno, os, sys
m = sys.argv[1]
def err(f, *a):
    try:
        f(*a)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print(err(os.rename, m + "/outputs/train.log", m + "/data/train.log"),
      err(os.rename, m + "/data/f1", m + "/outputs/f1"),
      err(os.symlink, "/etc/passwd", m + "/outputs/link"),
      err(os.link, m + "/outputs/train.log", m + "/outputs/hard"),
      err(os.mkdir, m + "/data/sub"),
      os.statvfs(m).f_flag & os.ST_RDONLY)
PYEOF
)
[[ $out == "EXDEV EXDEV EPERM EPERM "*" 0" ]] || fail "errnos across the boundary: $out"
echo "ok   the dataset stays read-only, renames across fail EXDEV, links EPERM ($out)"

# Drained soon after the writes (settle 200 ms by default).
for i in $(seq 1 100); do
  [[ $(st 'd["writes"]["steps_pending"] + d["writes"]["files_unsettled"]') == 0 ]] && break
  sleep 0.1
done
diff -r "$WORK/reference" "$WORK/persist" || fail "writes_persist: persist differs from the area while mounted"
unmount "$MNT" || fail "clairfsd exited non-zero: $(tail -5 "$LOG")"
diff -r "$WORK/reference" "$WORK/persist" || fail "persist differs from the area after the unmount"
ls -a "$WORK/persist" "$WORK/persist/ckpt" | grep -q clairfs-drain && fail "drain temporaries left in persist"
echo "ok   writes_persist: persist equals the area, no temporaries left"

# A later run on another node (an empty local dir) reads the outputs from persist.
MNT=$WORK/mnt2 LOG=$WORK/d2.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs \
  --writes-local "$WORK/local2" --writes-persist "$WORK/persist"
diff -r "$WORK/reference" "$MNT/outputs" || fail "a restart does not see the earlier outputs"
echo "resumed" >>"$MNT/outputs/train.log"
echo "resumed" >>"$WORK/reference/train.log"
unmount "$MNT" || fail "clairfsd exited non-zero: $(tail -5 "$LOG")"
diff -r "$WORK/reference" "$WORK/persist" || fail "an append to an earlier run's file was not drained"
echo "ok   a restart sees the earlier outputs and appends to them"

# Two daemons (two nodes) over one persist: what one drains the other reads,
# a replaced file with its new bytes, a removed one gone.
MNT=$WORK/mnt-a LOG=$WORK/da.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs \
  --writes-local "$WORK/local-a" --writes-persist "$WORK/persist-ab"
pid_a=$DAEMON_PID
mount_dataset "$WORK/out" "$WORK/mnt-b" "$WORK/db.log" --writes-dir outputs \
  --writes-local "$WORK/local-b" --writes-persist "$WORK/persist-ab"
pid_b=$DAEMON_PID
sync_area() { "$PY" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$1"; }
mkdir "$WORK/mnt-a/outputs/ckpt"
echo "epoch 1" >"$WORK/mnt-a/outputs/ckpt/model.pt"
sync_area "$WORK/mnt-a/outputs"
[[ $(cat "$WORK/mnt-b/outputs/ckpt/model.pt") == "epoch 1" ]] || fail "node b does not read what node a drained"
echo "epoch 2, longer" >"$WORK/mnt-a/outputs/ckpt/.tmp" && mv "$WORK/mnt-a/outputs/ckpt/.tmp" "$WORK/mnt-a/outputs/ckpt/model.pt"
sync_area "$WORK/mnt-a/outputs"
[[ $(cat "$WORK/mnt-b/outputs/ckpt/model.pt") == "epoch 2, longer" ]] || fail "node b reads the replaced file's old bytes"
ls "$WORK/mnt-b/outputs/ckpt" | grep -q tmp && fail "node b lists a's temporary"
rm "$WORK/mnt-a/outputs/ckpt/model.pt"
sync_area "$WORK/mnt-a/outputs"
[[ -e $WORK/mnt-b/outputs/ckpt/model.pt ]] && fail "node b still has the file a removed"
fusermount3 -u "$WORK/mnt-a" && fusermount3 -u "$WORK/mnt-b"
wait "$pid_a" && wait "$pid_b" || fail "a daemon exited non-zero"
echo "ok   two daemons over one persist: b reads what a drained, replaced and removed"

# A full local disk: a tmpfs of 1 MiB as writes_local. What does not fit is
# written to persist directly; nothing is short, nothing is lost.
mkdir -p "$WORK/tiny"
mount -t tmpfs -o size=1m tmpfs "$WORK/tiny" || fail "cannot mount a tmpfs (root is needed)"
MNT=$WORK/mnt-full LOG=$WORK/dfull.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs \
  --writes-local "$WORK/tiny/local" --writes-persist "$WORK/persist-full"
"$PY" - "$MNT/outputs" "$WORK/reference-full" <<'PYEOF' || { umount "$WORK/tiny"; fail "writing with a full local disk"; }
import os, sys, tempfile
for root in sys.argv[1:]:
    os.makedirs(root, exist_ok=True)
    data = bytes(range(256)) * 12288  # 3 MiB: more than the local disk
    with open(os.path.join(root, "small.txt"), "w") as f:
        f.write("fits\n")
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(data)
    fd, tmp = tempfile.mkstemp(dir=root)  # torch.save's way, too big as well
    os.write(fd, data[::-1])
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, os.path.join(root, "model.pt"))
    with open(os.path.join(root, "big.bin"), "r+b") as f:  # in place, after the move
        f.seek(1000)
        f.write(b"patched")
    os.truncate(os.path.join(root, "big.bin"), 2000000)
PYEOF
diff -r "$WORK/reference-full" "$MNT/outputs" || { umount "$WORK/tiny"; fail "the area differs after writes that did not fit"; }
direct=$(st 'd["writes"]["direct_files"]')
unmount "$MNT" || { umount "$WORK/tiny"; fail "clairfsd exited non-zero: $(tail -5 "$LOG")"; }
umount "$WORK/tiny"
diff -r "$WORK/reference-full" "$WORK/persist-full" || fail "persist differs after writes that did not fit"
((direct >= 2)) || fail "writes.direct_files is $direct, want the 2 files that did not fit"
grep -q "is full: .* written to .* directly" "$LOG" || fail "no message about the full local disk"
echo "ok   a full writes_local: $direct files written to persist directly, none short or lost"

# --- writes_settle_ms: closed files wait for it; fsync does not.
MNT=$WORK/mnt3 LOG=$WORK/d3.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs --writes-settle-ms 600000 \
  --writes-local "$WORK/local3" --writes-persist "$WORK/persist3"
echo "closed only" >"$MNT/outputs/closed.txt"
"$PY" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"fsynced")
os.fsync(fd)
os.close(fd)' "$MNT/outputs/synced.txt"
[[ $(cat "$WORK/persist3/synced.txt") == fsynced ]] || fail "fsync returned before the file was in persist"
sleep 1
[[ -e $WORK/persist3/closed.txt ]] && fail "writes_settle_ms 600000: drained 1 s after close"
# kill -9: the fsynced file is safe, the other one is drained by the next run.
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
fusermount3 -u -z "$MNT" 2>/dev/null || true
[[ $(cat "$WORK/persist3/synced.txt") == fsynced ]] || fail "lost an fsynced file to kill -9"
MNT=$WORK/mnt4 LOG=$WORK/d4.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs \
  --writes-local "$WORK/local3" --writes-persist "$WORK/persist3"
[[ $(st 'd["writes"]["recovered_files"]') == 1 ]] || fail "the killed run's file was not found: $(cat "$LOG")"
unmount "$MNT" || fail "clairfsd exited non-zero: $(tail -5 "$LOG")"
[[ $(cat "$WORK/persist3/closed.txt") == "closed only" ]] || fail "the killed run's file was not drained"
echo "ok   writes_settle_ms: a closed file waits for it, fsync does not; kill -9 loses nothing fsynced"

# --- writes_stall_ms: a persist that fails; the daemon says so and keeps the bytes.
MNT=$WORK/mnt5 LOG=$WORK/d5.log
mount_dataset "$WORK/out" "$MNT" "$LOG" --writes-dir outputs --writes-stall-ms 1500 \
  --writes-local "$WORK/local5" --writes-persist "$WORK/persist5"
mkdir "$MNT/outputs/run"
"$PY" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/outputs/run"
rmdir "$WORK/persist5/run" && echo "in the way" >"$WORK/persist5/run"
echo "weights" >"$MNT/outputs/run/w.bin"
"$PY" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.fsync(fd)
    print("fsync ok")
except OSError as e:
    print("fsync failed", e.errno)' "$MNT/outputs/run/w.bin" >"$WORK/fsync.out"
grep -q "fsync failed 20" "$WORK/fsync.out" || fail "fsync with persist failing: $(cat "$WORK/fsync.out")"
t0=$(date +%s)
rc=0
unmount "$MNT" || rc=$?
((rc == 1)) || fail "clairfsd exited $rc with its drain incomplete"
(($(date +%s) - t0 < 30)) || fail "the stopping daemon waited more than 30 s with writes_stall_ms 1500"
grep -q "not drained to .*drained at the next start" "$LOG" || fail "no message about the undrained writes: $(tail "$LOG")"
[[ $(cat "$WORK/local5/tree/run/w.bin") == weights ]] || fail "the undrained file is not kept in local"
echo "ok   writes_stall_ms: a failing persist fails fsync (ENOTDIR) and the stop, the bytes stay local"
echo "PASS"
