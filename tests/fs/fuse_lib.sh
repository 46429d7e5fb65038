# Shared by the fuse_*_test.sh scripts: prerequisites (skip with exit 77 and a
# reason; with CI=true a failure), a private temporary directory, starting
# clairfsd and always unmounting and cleaning up on exit. Source it; it sets
# WORK, BIN, SRC_DIR.
set -euo pipefail

BIN=${CLAIRFS_BIN:?CLAIRFS_BIN must point at the build bin directory}
SRC_DIR=${CLAIRFS_SRC:?CLAIRFS_SRC must point at the repository}
PY=/usr/bin/python3
DAEMON_PIDS=()
MOUNTS=()

skip() {  # CI installs everything a test needs (scripts/setup.sh): a skip there is a failure
  if [[ ${CI:-} == true ]]; then echo "FAIL (CI must not skip): $*"; exit 1; fi
  echo "SKIP: $*"
  exit 77
}
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -c /dev/fuse ] || skip "/dev/fuse is missing"
[ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is not readable and writable"
command -v fusermount3 >/dev/null || skip "fusermount3 is not installed"
[ -x "$PY" ] || skip "$PY is missing"
[ -x "$BIN/clairfsd" ] || skip "$BIN/clairfsd is not built"
[ -x "$BIN/clairfs-partition" ] || skip "$BIN/clairfs-partition is not built (make clairfs-partition)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-fuse.XXXXXX")

cleanup() {
  local m p
  for m in "${MOUNTS[@]+"${MOUNTS[@]}"}"; do
    fusermount3 -u -z "$m" 2>/dev/null || true
  done
  for p in "${DAEMON_PIDS[@]+"${DAEMON_PIDS[@]}"}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${DAEMON_PIDS[@]+"${DAEMON_PIDS[@]}"}"; do
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

is_mounted() { grep -qF " $1 fuse.clairfs " /proc/mounts; }

# pack SRC OUT [clairfs-partition options...]
pack() {
  local src=$1 out=$2
  shift 2
  "$BIN/clairfs-partition" pack "$src" "$out" "$@" >"$WORK/pack.log" 2>&1 ||
    { cat "$WORK/pack.log"; fail "clairfs-partition pack failed"; }
}

# mount_dataset OUT MNT LOG [clairfsd options...]: starts the daemon in the
# background (its pid in DAEMON_PID) and waits until the mount is up.
mount_dataset() {
  local out=$1 mnt=$2 log=$3
  shift 3
  mkdir -p "$mnt"
  "$BIN/clairfsd" --dataset "$out" --mount "$mnt" "$@" >"$log" 2>&1 &
  DAEMON_PID=$!
  DAEMON_PIDS+=("$DAEMON_PID")
  MOUNTS+=("$mnt")
  local i
  for i in $(seq 1 100); do
    is_mounted "$mnt" && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$log"; fail "clairfsd exited at start"; }
    sleep 0.1
  done
  cat "$log"
  fail "the mount did not appear within 10 s"
}

# The tricky tree of the integration tests: unicode, spaces, deep nesting,
# empty files and directories, a multi-frame compressible file, a multi-frame
# incompressible file, a long name, and a few hundred small files.
make_tree() {
  local t=$1
  mkdir -p "$t"
  "$PY" - "$t" <<'PYEOF'
import os, random, sys
root = sys.argv[1]
rng = random.Random(1234)
def put(rel, data):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
words = [b"tensor", b"epoch", b"batch", b"gradient", b"clairfs", b"shard", b"\n"]
def text(n):
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words) + b" "
    return bytes(out[:n])
put("ünïcödé/日本語 ファイル.txt", "こんにちは\n".encode() * 50)
put("with space/a file with spaces.bin", rng.randbytes(3000))
put("/".join("level%02d" % i for i in range(24)) + "/deep.txt", b"deep\n")
put("empty/zero.bin", b"")
put("zero-at-root", b"")
os.makedirs(os.path.join(root, "empty dir/nested empty"), exist_ok=True)
put("big/compressible.txt", text(5 * 1024 * 1024 + 12345))
put("big/random.bin", rng.randbytes(3 * 1024 * 1024 + 777))
put("n" * 255, b"long name\n")
put("-leading-dash", b"dash\n")
for i in range(300):
    size = rng.choice([0, 1, 17, 512, 4096, 4097, 30000, 131072])
    data = text(size) if i % 2 else rng.randbytes(size)
    put("many/d%02d/f%03d.dat" % (i % 13, i), data)
os.chmod(os.path.join(root, "-leading-dash"), 0o600)
os.chmod(os.path.join(root, "with space/a file with spaces.bin"), 0o755)
os.utime(os.path.join(root, "zero-at-root"), ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
PYEOF
}
