#!/bin/bash
# A prefetched file is in RAM once, through a real mount: once the kernel took
# it (pushed into the mount's page cache), its blocks leave the daemon's RAM
# cache, and the job's reads never reach the daemon. When the kernel drops the
# pages (drop_caches 1), the reads that reach the daemon load the files again
# and the RAM cache keeps them; when it drops the inodes (drop_caches 3), the
# daemon hears FORGET and fetches the files again. Every byte is checked
# against the source at each step.
source "${CLAIRFS_SRC:?}/tests/fs/fuse_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (drop_caches)"

# 4 classes x 10 images of 8-32 KiB, read in DataLoader(shuffle=False) order.
"$PY" - "$WORK/src" <<'PYEOF'
import os, random, sys
rng = random.Random(11)
for c in range(4):
    d = os.path.join(sys.argv[1], "train", "c%d" % c)
    os.makedirs(d)
    for i in range(10):
        with open(os.path.join(d, "i%02d.jpg" % i), "wb") as f:
            f.write(rng.randbytes(rng.randint(8192, 32768)))
PYEOF
pack "$WORK/src" "$WORK/out" --partitions 2
FILES=40 EPOCHS=8
total=$(find "$WORK/src/train" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
"$BIN/clairfs-order" --sampler torch-sequential --root "$WORK/src/train" --epochs $EPOCHS \
  >"$WORK/order" || fail "clairfs-order failed"
[[ $(wc -l <"$WORK/order") -eq $((FILES * EPOCHS)) ]] || fail "the order has not $((FILES * EPOCHS)) lines"

st() {  # st EXPR: EXPR over stats.json as d, p = d["prefetch"]["page_cache"]
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); p = d["prefetch"]["page_cache"]; print(eval(sys.argv[2]))' \
    "$M/.clairfs/stats.json" "$1"
}
until_true() {  # until_true EXPR WHAT: waits up to 10 s for EXPR
  local i
  for i in $(seq 1 100); do [[ $(st "$1") == True ]] && return 0; sleep 0.1; done
  cat "$M/.clairfs/stats.json"
  fail "$2"
}
reads() { st 'd["served"]["ram_cache"]["reads"] + d["served"]["local_pack"]["reads"]'; }
read_epoch() {  # read_epoch E: the epoch's files in order, each compared with the source
  local p
  while IFS= read -r p; do
    cmp -s "$WORK/src/train/$p" "$M/train/$p" || fail "epoch $1: $p differs from the source"
  done < <(sed -n "$(($1 * FILES + 1)),$((($1 + 1) * FILES))p" "$WORK/order")
}
fresh_mount() {  # fresh_mount NAME: a daemon whose files are all pushed, epoch 0 read
  M=$WORK/mnt-$1
  mount_dataset "$WORK/out" "$M" "$WORK/$1.log" --ram-cache 4M \
    --prefetch-sampler torch-sequential --prefetch-root train --prefetch-epochs $EPOCHS \
    --prefetch-batch-size 4 --prefetch-workers 1
  # The kernel learns the inodes from a listing; the pushes it refused before
  # then are made again, and each pushed file leaves the RAM cache.
  ls -lR "$M/train" >/dev/null
  until_true "p['held_files'] == $FILES" "not every file was held in the page cache alone"
  [[ $(st 'd["ram_cache"]["bytes"]') == 0 ]] || fail "pushed files still in the RAM cache"
  [[ $(st "p['held_bytes']") == "$total" ]] || fail "held bytes are not the dataset's $total"
  local before
  before=$(reads)
  read_epoch 0
  [[ $(reads) == "$before" ]] || fail "reads of pushed files reached the daemon ($before, then $(reads))"
  [[ $(st "p['reloaded']") == 0 ]] || fail "files reloaded though the page cache had them"
  echo "ok ($1): $FILES files held in the page cache alone ($total bytes), read without a READ"
}
finish() {  # finish NAME: no errors, no deviation; unmounted
  [[ $(st 'd["errors"]["corruption"] + d["errors"]["io"]') == 0 ]] || fail "$1: read errors"
  [[ $(st 'd["prefetch"]["deviations"]') == 0 ]] || fail "$1: the reads left the order"
  fusermount3 -u "$M"
  wait "$DAEMON_PID" || fail "$1: clairfsd did not exit cleanly"
}

# The kernel drops the pages only: the reads reach the daemon, which loads
# the files again and keeps them in its RAM cache.
fresh_mount pages
sync
echo 1 >/proc/sys/vm/drop_caches
read_epoch 1
[[ $(st "p['reloaded'] > 0 and d['ram_cache']['bytes'] > 0") == True ]] ||
  { cat "$M/.clairfs/stats.json"; fail "files whose pages the kernel dropped were not loaded again"; }
echo "ok: pages dropped: $(st "p['reloaded']") files loaded again, right bytes"
finish pages

# The kernel drops its caches, inodes included: FORGET tells the daemon the
# files are gone, and it fetches them again (the kernel refuses the pushes
# until it knows the inodes again, so the RAM cache keeps them).
fresh_mount inodes
fetched=$(st 'd["prefetch"]["fetched"]')
sync
echo 3 >/proc/sys/vm/drop_caches
until_true "p['forgotten'] > 0" "no FORGET of a pushed file reached the daemon"
until_true "d['prefetch']['fetched'] > $fetched and d['ram_cache']['bytes'] > 0" \
  "forgotten files were not fetched again"
read_epoch 1
echo "ok: inodes dropped: $(st "p['forgotten']") forgotten, fetched again, right bytes"
finish inodes
