#!/bin/bash
# Every write-type call on the mount fails with EROFS, and nothing changes.
source "$(dirname "$0")/fuse_lib.sh"

mkdir -p "$WORK/src/dir/sub"
echo original > "$WORK/src/dir/file.txt"
pack "$WORK/src" "$WORK/out" --partitions 1
mount_dataset "$WORK/out" "$WORK/mnt" "$WORK/daemon.log"
M=$WORK/mnt

expect_erofs() {
  local out
  if out=$("$@" 2>&1); then fail "succeeded: $*"; fi
  echo "$out" | grep -q "Read-only file system" || fail "not EROFS: $* -> $out"
}
expect_erofs touch "$M/new"
expect_erofs touch "$M/dir/file.txt"
expect_erofs mkdir "$M/newdir"
expect_erofs rm "$M/dir/file.txt"
expect_erofs rmdir "$M/dir/sub"
expect_erofs mv "$M/dir/file.txt" "$M/dir/renamed"
expect_erofs bash -c "echo x > '$M/dir/file.txt'"
expect_erofs bash -c "echo x >> '$M/dir/file.txt'"
expect_erofs bash -c "echo x > '$M/created'"
expect_erofs chmod 600 "$M/dir/file.txt"
expect_erofs truncate -s 0 "$M/dir/file.txt"
expect_erofs ln "$M/dir/file.txt" "$M/hardlink"
expect_erofs ln -s file.txt "$M/dir/symlink"

"$PY" - "$M" <<'PYEOF' || fail "a system call did not return EROFS"
import errno, os, sys
m = sys.argv[1]
f = os.path.join(m, "dir/file.txt")
calls = {
    "open O_WRONLY": lambda: os.open(f, os.O_WRONLY),
    "open O_RDWR": lambda: os.open(f, os.O_RDWR),
    "open O_CREAT": lambda: os.open(os.path.join(m, "c"), os.O_CREAT | os.O_WRONLY, 0o644),
    "open O_TRUNC": lambda: os.open(f, os.O_WRONLY | os.O_TRUNC),
    "mkdir": lambda: os.mkdir(os.path.join(m, "d")),
    "rmdir": lambda: os.rmdir(os.path.join(m, "dir/sub")),
    "unlink": lambda: os.unlink(f),
    "rename": lambda: os.rename(f, os.path.join(m, "r")),
    "link": lambda: os.link(f, os.path.join(m, "l")),
    "symlink": lambda: os.symlink("x", os.path.join(m, "s")),
    "chmod": lambda: os.chmod(f, 0o600),
    "chown": lambda: os.chown(f, 1, 1),
    "truncate": lambda: os.truncate(f, 0),
    "utime": lambda: os.utime(f, (1, 1)),
    "setxattr": lambda: os.setxattr(f, "user.x", b"1"),
    "removexattr": lambda: os.removexattr(f, "user.x"),
    "mknod": lambda: os.mkfifo(os.path.join(m, "fifo")),
}
bad = 0
for name, call in calls.items():
    try:
        call()
        print("SUCCEEDED:", name); bad += 1
    except OSError as e:
        if e.errno != errno.EROFS:
            print("%s: %s, not EROFS" % (name, errno.errorcode.get(e.errno))); bad += 1
# Reads still work and the tree is unchanged.
assert open(f).read() == "original\n"
try:
    os.getxattr(f, "user.x")
    bad += 1
except OSError as e:
    if e.errno != errno.ENODATA:
        print("getxattr:", errno.errorcode.get(e.errno)); bad += 1
if os.listxattr(f) != []:
    bad += 1
sys.exit(1 if bad else 0)
PYEOF
diff -r "$WORK/src" "$M" || fail "the tree changed"
echo PASS
