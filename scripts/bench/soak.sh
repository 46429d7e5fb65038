#!/usr/bin/env bash
# Soak: many concurrent readers over a 4-rank job for a long time, every byte
# compared with the source, the daemons' RSS, open fds and threads sampled.
# The tree (make_tree.py: odd names, empty to multi-MiB files) is packed with
# zstd and 64 KiB frames, replicas 1, so reads decode frames and cross ranks;
# the RAM cache is kept small (--ram-cache) so that it churns all the time.
# Prints a summary (and --json FILE writes the readers' whole report); exits 1
# on any wrong byte or read error, or when a daemon died.
#
# usage: scripts/bench/soak.sh [--minutes M] [--readers N] [--ram-cache SIZE]
#        [--files N] [--planner] [--json FILE]
#   --readers: in all, spread over the 4 mounts (default 64)
#   --planner: the daemons get a prediction (an order file of 4 ranks, 3
#              epochs, shuffled) that the random readers do not follow, so the
#              prefetch planner owns the RAM cache and, having lost the ranks,
#              keeps demand-read files oldest-out-first: the cache's other owner
#              under the same churn
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
PY=/usr/bin/python3
minutes=20 readers=64 ram_cache=16M files=3000 json="" planner=0
while (($#)); do
  case $1 in
    --minutes) minutes=$2; shift 2 ;; --readers) readers=$2; shift 2 ;;
    --ram-cache) ram_cache=$2; shift 2 ;; --files) files=$2; shift 2 ;;
    --json) json=$2; shift 2 ;; --planner) planner=1; shift ;;
    *) echo "usage: $0 [--minutes M] [--readers N] [--ram-cache SIZE] [--files N] [--planner] [--json FILE]" >&2; exit 2 ;;
  esac
done
((readers >= 4)) || { echo "soak.sh: --readers must be at least 4 (one per mount)" >&2; exit 2; }
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec) || { echo "soak.sh: no mpiexec" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-soak.XXXXXX")
launcher=""
cleanup() {
  [[ -n $launcher ]] && kill -TERM "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
  for m in "$W"/mnt*; do mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"; done
  rm -rf "$W"
}
trap cleanup EXIT

echo "soak: making a tree of about $files files and packing it (zstd, 64 KiB frames)" >&2
$PY "$repo/tests/partitioner/make_tree.py" "$W/src" --small "$files" --no-links >/dev/null
"$BIN/clairfs-partition" pack "$W/src" "$W/out" --partitions 8 --compress zstd \
  --frame-size 65536 >/dev/null
mkdir -p "$W"/mnt{0,1,2,3}
predict=()
if ((planner)); then
  $PY - "$W/src" >"$W/order" <<'ORDER'
import os, random, sys
root = sys.argv[1]
# An order file is one path a line: names it cannot hold are left out.
files = sorted(p for p in (os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
                           for f in fs) if p.isprintable())
print("# clairfs-order v1\n# world-size 4")
rng = random.Random(7)
for epoch in range(3):
    rng.shuffle(files)
    for rank in range(4):
        print("# epoch %d rank %d" % (epoch, rank))
        print("\n".join(files[rank::4]))
ORDER
  predict=(--prefetch-sampler order-file --prefetch-layout list --prefetch-order-file "$W/order" --prefetch-epochs 3
    --prefetch-world-size 4 --prefetch-ranks-per-node 1)
fi
"$MPIEXEC" -n 4 "$BIN/clairfsd" --dataset "$W/out" --mount "$W/mnt{rank}" \
  --local-dir "$W/ssd{rank}" --ram-cache "$ram_cache" "${predict[@]}" >"$W/log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$W"/mnt{0,1,2,3} --timeout 120 --quiet || { cat "$W/log" >&2; exit 1; }
pairs=()
for r in 0 1 2 3; do
  pid=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['cluster']['pid'])" \
    "$W/mnt$r/.clairfs/stats.json")
  pairs+=("$W/mnt$r:$pid")
done
echo "soak: $readers readers over 4 mounts for $minutes min, ram_cache $ram_cache" \
  "$( ((planner)) && echo "kept by the prefetch planner" || echo "(LRU)")" >&2
set +e
$PY "$repo/scripts/bench/soak_readers.py" "$W/src" $((minutes * 60)) $((readers / 4)) 10 \
  "${pairs[@]}" >"$W/report.json"
rc=$?
set -e
[[ -n $json ]] && cp "$W/report.json" "$json"
$PY - "$W/report.json" "$W/log" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["samples"]
print("readers %d, %.0f s, %d files: %d reads, %.1f GB compared, %d wrong, %d errors"
      % (r["readers"], r["seconds"], r["files"], r["reads"], r["bytes"] / 1e9, r["wrong"], r["errors"]))
for p in r["first_problems"]:
    print("  " + p)
for rank in range(len(s[0]["daemons"])):
    rss = [x["daemons"][rank]["rss_mib"] for x in s]
    fds = [x["daemons"][rank]["fds"] for x in s]
    thr = [x["daemons"][rank]["threads"] for x in s]
    print("rank %d: RSS %.0f MiB at the start, %.0f max, %.0f at the end (%d samples); "
          "fds %d -> %d (max %d); threads %d -> %d (max %d)"
          % (rank, rss[0], max(rss), rss[-1], len(rss), fds[0], fds[-1], max(fds),
             thr[0], thr[-1], max(thr)))
EOF
if ((planner)); then
  for r in 0 1 2 3; do
    $PY -c "import json,sys; s=json.load(open(sys.argv[1])); c=s['ram_cache']; p=s['prefetch']
print('rank %s: cache kept by %s, peak %d of %d bytes; planner lost %s, admitted %d, opens %d'
      % (sys.argv[2], c['kept_by'], c['peak_bytes'], c['capacity_bytes'], p['lost'], p['admitted'], p['opens']))" \
      "$W/mnt$r/.clairfs/stats.json" "$r"
  done
fi
kill -TERM "$launcher"; wait "$launcher" || { echo "soak: the job did not end cleanly" >&2; rc=1; }
launcher=""
exit $rc
