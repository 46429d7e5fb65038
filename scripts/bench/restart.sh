#!/usr/bin/env bash
# A job restarted where its packs are staged already (a stable local_dir):
# two clairfsd builds side by side. The packs sit on the throttled stand-in
# for a shared file system (REFERENCE.md section 5); a first run stages them
# into a local directory. Then each build in turn (alternating, ROUNDS rounds)
# is started on that directory with every page cache dropped, and
# clairfs-bench reads every file once, in one seeded random order with 2
# threads, as soon as the mount is up. Prints per run: seconds from the
# daemon's launch to the last byte read, and MiB the daemon read from the
# stand-in meanwhile (stats.json cluster.source: staged + direct bytes).
#
# usage: scripts/bench/restart.sh OLD_BIN_DIR NEW_BIN_DIR [ROUNDS] [--mib M] [--mbps B]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
usage() { echo "usage: $0 OLD_BIN_DIR NEW_BIN_DIR [ROUNDS] [--mib M] [--mbps B]" >&2; exit 2; }
(($# >= 2)) || usage
old=$1 new=$2
shift 2
rounds=3 mib=1024 mbps=100
if (($#)) && [[ $1 != --* ]]; then rounds=$1; shift; fi
while (($#)); do
  case $1 in
    --mib) mib=$2; shift 2 ;; --mbps) mbps=$2; shift 2 ;; *) usage ;;
  esac
done
source "$repo/scripts/bench/throttle.sh"
bench_workspace restart $((mib * 2 / 1024 + 2)) "$mbps" 500
echo "bench: restart on staged packs, $mib MiB in files of 256 KiB; the stand-in: $PFS_DESC" >&2
/usr/bin/python3 - "$PFS_MNT/src" "$mib" <<'PY'
import os, random, sys
root, mib = sys.argv[1], int(sys.argv[2])
r = random.Random(3)
for i in range(mib * 4):
    d = os.path.join(root, "d%02d" % (i % 16))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(r.randbytes(256 * 1024))
PY
"$BIN/clairfs-partition" pack "$PFS_MNT/src" "$PFS_MNT/ds" --partitions 4 >/dev/null
"$BIN/clairfs-bench" --walk --root "$PFS_MNT/src" --write-list "$W/list" >/dev/null
pfs_enter
mkdir -p "$W/mnt"

# run LABEL BIN_DIR: prints "LABEL seconds MiB-from-the-stand-in"
run() {
  drop_caches
  local t0 t1 pid
  t0=$(date +%s.%N)
  "$2/clairfsd" --dataset "$PFS_MNT/ds" --mount "$W/mnt" --local-dir "$W/ssd" >"$W/$1.log" 2>&1 &
  pid=$!
  "$BIN/clairfs-wait" "$W/mnt" --quiet --timeout 60
  "$BIN/clairfs-bench" --list "$W/list" --root "$W/mnt" --threads 2 --seed 5 >/dev/null
  t1=$(date +%s.%N)
  local from
  from=$(/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["cluster"]["source"]
print("%.0f" % ((s["staged_bytes"] + s["direct_bytes"]) / 2**20))' "$W/mnt/.clairfs/stats.json")
  fusermount3 -u "$W/mnt"
  wait "$pid" || true
  echo "$1 $(/usr/bin/python3 -c "print('%.2f' % ($t1 - $t0))") $from"
}
run stage "$new" >/dev/null  # the first run: stages every pack into $W/ssd
for i in $(seq 1 "$rounds"); do
  run old "$old"
  run new "$new"
done
