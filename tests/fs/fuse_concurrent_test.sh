#!/bin/bash
# Many readers at once over a RAM cache far smaller than the data: every file
# still reads back exactly (single flight, eviction while readers hold blocks),
# the cache stays within its budget; then the same with every OPEN sent to the
# daemon (no_open: false) and a single FUSE thread.
source "$(dirname "$0")/fuse_lib.sh"

make_tree "$WORK/src"
pack "$WORK/src" "$WORK/out" --partitions 3 --frame-size 131072

check_parallel() {  # check_parallel MNT: 8 threads, 3 shuffled passes each
  "$PY" - "$WORK/src" "$1" <<'PYEOF' || fail "parallel reads through $1 differ"
import hashlib, os, random, sys
from concurrent.futures import ThreadPoolExecutor
src, mnt = sys.argv[1], sys.argv[2]
files = []
for d, _, names in os.walk(src):
    files += [os.path.relpath(os.path.join(d, n), src) for n in names]
want = {f: hashlib.sha256(open(os.path.join(src, f), "rb").read()).hexdigest() for f in files}
def worker(seed):
    order = files * 3
    random.Random(seed).shuffle(order)
    bad = []
    for f in order:
        with open(os.path.join(mnt, f), "rb") as fh:
            got = hashlib.sha256(fh.read()).hexdigest()
        if got != want[f]:
            bad.append(f)
    return bad
with ThreadPoolExecutor(8) as pool:
    bad = [b for r in pool.map(worker, range(8)) for b in r]
print("parallel reads:", len(files) * 24, "bad:", len(bad), bad[:5])
sys.exit(1 if bad else 0)
PYEOF
}
budget_ok() {
  "$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["ram_cache"]; assert c["bytes"] <= c["capacity_bytes"] and c["evictions"] > 0, c' \
    "$1/.clairfs/stats.json" || fail "cache over budget or never evicted"
}

mount_dataset "$WORK/out" "$WORK/mnt1" "$WORK/daemon1.log" --ram-cache 512K --threads 8
check_parallel "$WORK/mnt1"
budget_ok "$WORK/mnt1"

mount_dataset "$WORK/out" "$WORK/mnt2" "$WORK/daemon2.log" --ram-cache 512K --threads 1 \
  --no-open false --no-opendir false
check_parallel "$WORK/mnt2"
diff -r "$WORK/src" "$WORK/mnt2" || fail "diff -r with no_open false"
budget_ok "$WORK/mnt2"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["requests"]; assert r["open"] > 100, r' \
  "$WORK/mnt2/.clairfs/stats.json" || fail "opens did not reach the daemon with no_open false"
echo PASS
