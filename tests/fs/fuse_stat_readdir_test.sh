#!/bin/bash
# stat fields (type, mode, size, mtime) of every path match the source, and
# every directory lists exactly the source's entries.
source "$(dirname "$0")/fuse_lib.sh"

make_tree "$WORK/src"
pack "$WORK/src" "$WORK/out" --partitions 2
mount_dataset "$WORK/out" "$WORK/mnt" "$WORK/daemon.log"

"$PY" - "$WORK/src" "$WORK/mnt" <<'PYEOF' || fail "metadata differs"
import os, stat, sys
src, mnt = sys.argv[1], sys.argv[2]
bad = 0
checked = 0
def report(msg):
    global bad
    bad += 1
    if bad <= 20:
        print("MISMATCH:", msg)
for dirpath, dirnames, filenames in os.walk(src):
    rel = os.path.relpath(dirpath, src)
    mdir = os.path.join(mnt, rel)
    want = sorted(os.listdir(dirpath))
    got = sorted(os.listdir(mdir))
    if want != got:
        report("%s lists %r, source %r" % (rel, got[:5], want[:5]))
    with os.scandir(mdir) as it:  # readdir(plus) types agree with stat
        for e in it:
            if e.is_dir(follow_symlinks=False) != os.path.isdir(os.path.join(dirpath, e.name)):
                report("d_type of %s" % os.path.join(rel, e.name))
    for name in dirnames + filenames:
        a = os.lstat(os.path.join(dirpath, name))
        b = os.lstat(os.path.join(mdir, name))
        checked += 1
        path = os.path.join(rel, name)
        if stat.S_IFMT(a.st_mode) != stat.S_IFMT(b.st_mode):
            report("%s type" % path)
        if stat.S_IMODE(a.st_mode) != stat.S_IMODE(b.st_mode):
            report("%s mode %o vs %o" % (path, b.st_mode, a.st_mode))
        if stat.S_ISREG(a.st_mode) and a.st_size != b.st_size:
            report("%s size %d vs %d" % (path, b.st_size, a.st_size))
        if a.st_mtime_ns != b.st_mtime_ns:
            report("%s mtime %d vs %d" % (path, b.st_mtime_ns, a.st_mtime_ns))
        if stat.S_ISREG(a.st_mode) and b.st_blocks * 512 < b.st_size:
            report("%s st_blocks too small" % path)
root = os.stat(src)
if os.stat(mnt).st_mtime_ns != root.st_mtime_ns:
    report("root mtime")
print("checked", checked, "paths,", bad, "mismatches")
sys.exit(1 if bad else 0)
PYEOF
# The same through coreutils stat, for a few paths.
for p in "zero-at-root" "big/random.bin" "ünïcödé/日本語 ファイル.txt" "empty dir"; do
  a=$(cd "$WORK/src" && stat -c '%F %a %s %Y' "$p")
  b=$(cd "$WORK/mnt" && stat -c '%F %a %s %Y' "$p")
  [ "$a" = "$b" ] || fail "stat of $p: mount '$b', source '$a'"
done
[ "$(stat -c %y "$WORK/mnt/zero-at-root")" = "$(stat -c %y "$WORK/src/zero-at-root")" ] ||
  fail "nanosecond mtime differs"
echo PASS
