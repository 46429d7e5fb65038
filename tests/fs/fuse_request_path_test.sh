#!/bin/bash
# Slow requests never hold up fast ones (docs/fuse.md, "The request path").
#
# The packs of the daemon under test (B) live on another clairfs mount (A).
# Once A is SIGSTOPped, every READ of B that needs pack bytes blocks until A
# resumes. With B's waiting-read threads (threads: 2) and more all held that
# way, B must still answer at once what needs no wait: a lookup, attributes, a
# listing, Python's open() (its isatty ioctl), a READ of a file already in B's
# RAM (dropped from the page cache first, so the READ reaches B), and its
# stats.json. Then A resumes and every held read returns the right bytes.
# The `timeout`s only turn a hang into a failure.
source "$(dirname "$0")/fuse_lib.sh"

mkdir -p "$WORK/src/slow"
"$PY" - "$WORK/src" <<'EOF'
import os, sys
root = sys.argv[1]
for i in range(6):  # each far larger than any read-ahead: their READs reach A
    with open(os.path.join(root, "slow", "s%d.bin" % i), "wb") as f:
        f.write(os.urandom(6 << 20))
os.makedirs(os.path.join(root, "fast"))
for i in range(20):
    with open(os.path.join(root, "fast", "f%02d.txt" % i), "wb") as f:
        f.write(os.urandom(3000))
EOF
pack "$WORK/src" "$WORK/inner" --partitions 2 --placement contiguous
pack "$WORK/inner" "$WORK/outer" --partitions 1
mount_dataset "$WORK/outer" "$WORK/a" "$WORK/a.log"
A=$DAEMON_PID
mount_dataset "$WORK/a" "$WORK/b" "$WORK/b.log" --threads 2 --fuse-threads 1
cmp "$WORK/src/fast/f00.txt" "$WORK/b/fast/f00.txt" || fail "B does not serve the fast file"

kill -STOP "$A"
trap 'kill -CONT "$A" 2>/dev/null; cleanup' EXIT
readers=()
for i in 0 1 2 3 4 5; do
  cmp "$WORK/src/slow/s$i.bin" "$WORK/b/slow/s$i.bin" >"$WORK/cmp$i" 2>&1 &
  readers+=($!)
done
sleep 1
held=0
for p in "${readers[@]}"; do kill -0 "$p" 2>/dev/null && held=$((held + 1)); done
((held >= 3)) || fail "only $held of 6 slow reads were held by the stopped source (the test needs more than threads: 2)"
echo "ok   $held slow reads held while A is stopped"

timeout 10 stat "$WORK/b/fast/f07.txt" >/dev/null || fail "stat hung behind slow reads"
timeout 10 ls "$WORK/b/fast" >/dev/null || fail "a listing hung behind slow reads"
timeout 10 "$PY" - "$WORK/b/fast/f00.txt" "$WORK/src/fast/f00.txt" <<'EOF' || fail "a READ of bytes in RAM hung or differed behind slow reads"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the READ must reach the daemon
os.close(fd)
with open(sys.argv[1], "rb") as got, open(sys.argv[2], "rb") as want:  # open(): the ioctl
    assert got.read() == want.read()
EOF
timeout 10 cat "$WORK/b/.clairfs/stats.json" >/dev/null || fail "stats.json hung behind slow reads"
echo "ok   lookup, listing, open (ioctl), a READ from RAM and stats.json answered meanwhile"
for p in "${readers[@]}"; do kill -0 "$p" 2>/dev/null; done || true

kill -CONT "$A"
for i in 0 1 2 3 4 5; do
  timeout 120 tail --pid="${readers[$i]}" -f /dev/null || fail "slow read $i still held after A resumed"
  wait "${readers[$i]}" || { cat "$WORK/cmp$i"; fail "slow read $i returned wrong bytes"; }
done
echo "ok   every held read returned the right bytes once A resumed"
echo PASS
