#!/bin/bash
# Random-offset reads (seeded) of multi-frame files - compressed and raw - match
# the source, through the page cache and with direct reads at odd offsets.
source "$(dirname "$0")/fuse_lib.sh"

make_tree "$WORK/src"
pack "$WORK/src" "$WORK/out" --partitions 2 --frame-size 65536
mount_dataset "$WORK/out" "$WORK/mnt" "$WORK/daemon.log" --ram-cache 1M

"$PY" - "$WORK/src" "$WORK/mnt" <<'PYEOF' || fail "random reads differ"
import os, random, sys
src, mnt = sys.argv[1], sys.argv[2]
rng = random.Random(20240607)
bad = 0
for rel in ["big/compressible.txt", "big/random.bin", "ünïcödé/日本語 ファイル.txt"]:
    want = open(os.path.join(src, rel), "rb").read()
    fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
    try:
        for i in range(400):
            off = rng.randrange(0, len(want) + 100)
            n = rng.choice([1, 7, 4095, 4096, 65535, 65536, 65537, 200000, 1 << 20])
            got = os.pread(fd, n, off)
            if got != want[off:off + n]:
                bad += 1
                print("MISMATCH %s off %d len %d: got %d bytes" % (rel, off, n, len(got)))
                if bad > 10:
                    sys.exit(1)
    finally:
        os.close(fd)
print("reads ok" if not bad else "%d bad reads" % bad)
sys.exit(1 if bad else 0)
PYEOF
# A 1 MiB RAM cache cannot hold the 5 MiB file: it was served by evicting, within budget.
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["ram_cache"]; assert c["bytes"] <= c["capacity_bytes"] and c["evictions"] > 0, c' \
  "$WORK/mnt/.clairfs/stats.json" || fail "cache budget or evictions wrong"
echo PASS
