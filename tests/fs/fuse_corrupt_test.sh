#!/bin/bash
# A corrupted payload reads as EIO - never as bytes - with one log line naming
# the file and its partition; intact files and intact frames still read.
source "$(dirname "$0")/fuse_lib.sh"
LOCATE="$PY $(dirname "$0")/locate_payload.py"

mkdir -p "$WORK/src"
"$PY" - "$WORK/src" <<'PYEOF'
import os, random, sys
rng = random.Random(5)
root = sys.argv[1]
text = lambda n: (b"epoch batch tensor gradient shard\n" * (n // 34 + 1))[:n]
open(os.path.join(root, "raw.bin"), "wb").write(rng.randbytes(60000))  # under one frame: raw
open(os.path.join(root, "small.txt"), "wb").write(text(50000))
open(os.path.join(root, "framed.txt"), "wb").write(text(4 * 65536 + 100))
open(os.path.join(root, "later.bin"), "wb").write(rng.randbytes(100000))
open(os.path.join(root, "intact.bin"), "wb").write(rng.randbytes(1000))
PYEOF
pack "$WORK/src" "$WORK/out" --partitions 2 --frame-size 65536

flip() {  # flip OUT RELPATH DELTA: xor one byte at payload offset + DELTA
  read -r packfile offset stored codec < <($LOCATE "$WORK/out" "$2")
  echo "corrupting $2 ($codec, $stored bytes in $packfile at $offset + $3)"
  "$PY" - "$1/$packfile" $((offset + $3)) <<'PYEOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xFF]))
PYEOF
}
[ "$($LOCATE "$WORK/out" raw.bin | cut -d' ' -f4)" = raw ] || fail "raw.bin is not stored raw"
[ "$($LOCATE "$WORK/out" small.txt | cut -d' ' -f4)" = zstd ] || fail "small.txt is not zstd"
[ "$($LOCATE "$WORK/out" framed.txt | cut -d' ' -f4)" = framed ] || fail "framed.txt is not framed"
flip "$WORK/out" raw.bin 31234
flip "$WORK/out" small.txt 10
# Last bytes of the payload: inside the last frame (file bytes 262144..262243).
read -r _ _ fstored _ < <($LOCATE "$WORK/out" framed.txt)
flip "$WORK/out" framed.txt $((fstored - 3))

mount_dataset "$WORK/out" "$WORK/mnt" "$WORK/daemon.log"
M=$WORK/mnt

expect_eio() {  # expect_eio PATH [OFFSET LENGTH]
  "$PY" - "$@" <<'PYEOF' || fail "reading $1 did not fail with EIO"
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
off = int(sys.argv[2]) if len(sys.argv) > 2 else 0
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
try:
    got = b""
    while len(got) < n:
        chunk = os.pread(fd, min(1 << 20, n - len(got)), off + len(got))
        if not chunk:
            break
        got += chunk
    print("read %d bytes instead of EIO" % len(got)); sys.exit(1)
except OSError as e:
    sys.exit(0 if e.errno == errno.EIO else 1)
PYEOF
}
expect_eio "$M/raw.bin"
expect_eio "$M/small.txt"
expect_eio "$M/framed.txt" 262144 100
cat "$M/raw.bin" >/dev/null 2>&1 && fail "cat of a corrupt file succeeded"
# Frames 0-3 of framed.txt are intact and still served.
cmp -n 262144 "$M/framed.txt" "$WORK/src/framed.txt" || fail "intact frames not served"
cmp "$M/intact.bin" "$WORK/src/intact.bin" || fail "intact file not served"

# Damage while mounted, to a file not read yet: the daemon reads it from the pack.
flip "$WORK/out" later.bin 5000
expect_eio "$M/later.bin"

grep -q "raw.bin (partition [0-9]*, part-[0-9]*): checksum mismatch" "$WORK/daemon.log" ||
  fail "no log line naming raw.bin and its partition"
grep -q "small.txt (partition" "$WORK/daemon.log" || fail "no log line naming small.txt"
grep -q "framed.txt (partition .*frame 4" "$WORK/daemon.log" || fail "no log line naming the frame"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["errors"]["corruption"] >= 4, d["errors"]' \
  "$M/.clairfs/stats.json" || fail "stats.json does not count the corruption"
echo PASS
