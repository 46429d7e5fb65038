#!/bin/bash
# Mount a packed tricky tree and compare it byte for byte with the source
# (diff -r), then check the control files.
source "$(dirname "$0")/fuse_lib.sh"

make_tree "$WORK/src"
pack "$WORK/src" "$WORK/out" --partitions 3 --frame-size 262144
mount_dataset "$WORK/out" "$WORK/mnt" "$WORK/daemon.log" --ram-cache 64M

diff -r "$WORK/src" "$WORK/mnt" || fail "diff -r found differences"
# A second pass (page cache and RAM cache) must be just as exact.
diff -r "$WORK/src" "$WORK/mnt" || fail "second diff -r found differences"

ls -A "$WORK/mnt" | grep -qx .clairfs && fail ".clairfs is listed in the root"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["errors"]["corruption"] == 0, d; assert d["local_pack"]["files_loaded"] > 0, d' \
  "$WORK/mnt/.clairfs/stats.json" || fail "stats.json is not the expected JSON"
grep -q '^ram_cache: 67108864$' "$WORK/mnt/.clairfs/config" || fail "config does not show ram_cache"
grep -q 'clairfsd: config: ram_cache: 67108864' "$WORK/daemon.log" || fail "effective config not logged"
echo "PASS: diff -r of $(find "$WORK/src" -type f | wc -l) files"
