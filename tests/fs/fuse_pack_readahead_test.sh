#!/bin/bash
# pack_readahead reaches the daemon: with it, the first read of a file brings
# its whole pack into the page cache (fincore); without it, only the pages
# read. (The setting was parsed but unused for a while: this guards it.)
source "$(dirname "$0")/fuse_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (drop_caches)"
command -v fincore >/dev/null || skip "fincore (util-linux) missing"

make_tree "$WORK/src"
pack "$WORK/src" "$WORK/out" --partitions 1
pack_bytes=$(stat -c %s "$WORK/out/part-00000")
cached() { fincore --bytes --noheadings --output RES "$WORK/out/part-00000" | tr -d ' '; }
for ra in 0 1G; do
  sync; echo 3 >/proc/sys/vm/drop_caches
  mount_dataset "$WORK/out" "$WORK/mnt-$ra" "$WORK/ra-$ra.log" --pack-readahead "$ra"
  cat "$WORK/mnt-$ra/zero-at-root" "$WORK/mnt-$ra/-leading-dash" >/dev/null
  got=0
  # Without it, 5 s in which the cached bytes must not grow. With it, until the
  # whole pack is cached: WILLNEED only starts the reads, and on a busy machine
  # the last pages can take seconds (a run beside two test suites had 2 pages
  # left after 5 s), so up to 30 s.
  limit=50
  [ "$ra" = 0 ] || limit=300
  for i in $(seq 1 "$limit"); do
    got=$(cached)
    [ "$ra" = 0 ] || [ "$got" -lt "$pack_bytes" ] || break
    sleep 0.1
  done
  if [ "$ra" = 0 ]; then
    [ "$got" -lt $((pack_bytes / 4)) ] || fail "without pack_readahead $got of $pack_bytes pack bytes cached"
  else
    [ "$got" -ge "$pack_bytes" ] || fail "with pack_readahead 1G only $got of $pack_bytes pack bytes cached"
  fi
  echo "ok   pack_readahead $ra: $got of $pack_bytes pack bytes in the page cache after one small read"
  kill "$DAEMON_PID"; wait "$DAEMON_PID" || true
done
echo PASS
