#!/bin/bash
# Faults around one daemon (the 1-rank column of the fault matrix; the 4-rank
# one is tests/fs/dist/fault_matrix_test.sh). Each must cost at most the reads it
# touches - as EIO or as a slower path, never a wrong byte or a hang - and
# leave the daemon serving the rest:
# - the local disk fills up while staging: the packs that do not fit are read
#   from the dataset directory, the error names the pack, no partial copy stays;
# - the dataset directory vanishes while serving (renamed away): staged packs
#   and packs already open still serve;
# - readers killed while their requests are in flight (a 64 MiB read each);
# - the mount point unmounted under the daemon (fusermount3 -u -z): it exits 0.
source "$(dirname "$0")/fuse_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (a small tmpfs for the full disk)"

make_tree "$WORK/src"
"$PY" -c "import os,sys; open(sys.argv[1],'wb').write(os.urandom(64 << 20))" "$WORK/src/big/huge.bin"
pack "$WORK/src" "$WORK/out" --partitions 4 --compress zstd --frame-size 65536
same() { timeout 120 diff -r "$WORK/src" "$1" >"$WORK/diff" 2>&1 || { head -5 "$WORK/diff"; return 1; }; }

# --- the local disk fills up while staging.
mkdir -p "$WORK/tiny"
mount -t tmpfs -o size=2m tmpfs "$WORK/tiny"
trap 'umount -l "$WORK/tiny" 2>/dev/null; cleanup' EXIT
mount_dataset "$WORK/out" "$WORK/mnt-full" "$WORK/full.log" --local-dir "$WORK/tiny"
for i in $(seq 1 100); do grep -q "staging done" "$WORK/full.log" && break; sleep 0.1; done
grep -q "No space left on device" "$WORK/full.log" && grep -q "staging part-0000[0-9] failed, reads of it go to" "$WORK/full.log" \
  || { cat "$WORK/full.log"; fail "disk full: no error naming the pack and the fallback"; }
ls -a "$WORK/tiny" | grep -q "\.staging$" && fail "disk full: a partial copy was left behind"
same "$WORK/mnt-full" || fail "disk full: the mount differs from the source"
# The bytes of a pack that failed are not counted as copied.
copied=$("$PY" - "$WORK/mnt-full/.clairfs/stats.json" <<'PYEOF'
import json, sys
def find(d):
    if isinstance(d, dict):
        if "bytes_copied" in d:
            return d["bytes_copied"]
        for v in d.values():
            r = find(v)
            if r is not None:
                return r
    return None
print(find(json.load(open(sys.argv[1]))))
PYEOF
)
[[ $copied =~ ^[0-9]+$ ]] && ((copied <= 2 << 20)) \
  || fail "disk full: stats.json counts '$copied' bytes copied onto a 2 MiB disk"
echo "ok   disk full while staging: named, no partial copy, every file right, $copied bytes counted as copied"

# --- the dataset directory vanishes while serving.
cp -r "$WORK/out" "$WORK/out2"
rm -rf "$WORK/ssd"
mount_dataset "$WORK/out2" "$WORK/mnt-vanish" "$WORK/vanish.log" --local-dir "$WORK/ssd"
for i in $(seq 1 100); do grep -q "staging done" "$WORK/vanish.log" && break; sleep 0.1; done
mv "$WORK/out2" "$WORK/out2-gone"
same "$WORK/mnt-vanish" || fail "dataset gone: the mount differs from the source"
kill -0 "$DAEMON_PID" || fail "dataset gone: the daemon died"
echo "ok   dataset directory gone while serving: the staged packs serve every file"

# --- readers killed with requests in flight.
mount_dataset "$WORK/out" "$WORK/mnt-readers" "$WORK/readers.log" --ram-cache 8M
pids=()
for i in 1 2 3 4 5 6 7 8; do
  "$PY" -c "import sys; open(sys.argv[1],'rb').read()" "$WORK/mnt-readers/big/huge.bin" &
  pids+=($!)
done
sleep 0.3
kill -KILL "${pids[@]}" 2>/dev/null || true
wait "${pids[@]}" 2>/dev/null || true
same "$WORK/mnt-readers" || fail "killed readers: the mount differs afterwards"
kill -0 "$DAEMON_PID" || fail "killed readers: the daemon died"
echo "ok   8 readers killed mid-read: the daemon serves every file right afterwards"

# --- the mount point unmounted under the daemon.
pid=$DAEMON_PID
fusermount3 -u -z "$WORK/mnt-readers"
rc=0
timeout 30 tail --pid="$pid" -f /dev/null || fail "unmounted under it: the daemon still runs after 30 s"
wait "$pid" || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/readers.log"; fail "unmounted under it: exit $rc"; }
echo "ok   unmounted under the daemon: it exits 0"
echo PASS
