#!/usr/bin/env bash
# Two clairfsd builds side by side on the same cold reads: a mount of local
# packs (1,500 files of 128 KiB and 60 framed files of 4 MiB), page caches
# dropped before each pass, clairfs-bench reading every file in one seeded
# random order with 2 threads; the builds alternate, ROUNDS rounds. For a
# change on the read path: build the old commit elsewhere (git worktree add
# DIR COMMIT; cmake --build DIR/build --target clairfsd) and compare.
#
# usage: scripts/bench/compare_builds.sh OLD_BIN_DIR NEW_BIN_DIR [ROUNDS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
old=${1:?usage: $0 OLD_BIN_DIR NEW_BIN_DIR [ROUNDS]} new=${2:?usage: $0 OLD_BIN_DIR NEW_BIN_DIR [ROUNDS]}
rounds=${3:-6}
[[ $(id -u) -eq 0 ]] || { echo "compare_builds: needs root (drop_caches)"; exit 77; }
W=$(mktemp -d /var/tmp/clairfs-compare.XXXXXX)
pid=""
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; fusermount3 -u -z "$W/mnt" 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/src/a" "$W/src/b"
/usr/bin/python3 - "$W/src" <<'PY'
import os, random, sys
r = random.Random(1)
for i in range(1500):
    open(os.path.join(sys.argv[1], "a", "s%04d" % i), "wb").write(r.randbytes(128 * 1024))
for i in range(60):
    open(os.path.join(sys.argv[1], "b", "l%03d" % i), "wb").write(r.randbytes(4 << 20))
PY
"$BIN/clairfs-partition" pack "$W/src" "$W/out" --partitions 1 >/dev/null
"$BIN/clairfs-bench" --walk --root "$W/src" --write-list "$W/list" >/dev/null
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
run() {  # run LABEL BIN_DIR -> "LABEL MB/s"
  mkdir -p "$W/mnt"
  "$2/clairfsd" --dataset "$W/out" --mount "$W/mnt" >"$W/log" 2>&1 &
  pid=$!
  "$BIN/clairfs-wait" "$W/mnt" --quiet --timeout 30
  drop
  "$BIN/clairfs-bench" --list "$W/list" --root "$W/mnt" --threads 2 --seed 5 --json --label "$1" |
    /usr/bin/python3 -c "import json,sys; print('$1 %.0f' % json.load(sys.stdin)['mb_per_s'])"
  kill "$pid"; wait "$pid" || true; pid=""
}
for ((i = 0; i < rounds; i++)); do run old "$old"; run new "$new"; done | tee "$W/rows"
/usr/bin/python3 - "$W/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    rows.setdefault(k, []).append(float(v))
o, n = statistics.median(rows["old"]), statistics.median(rows["new"])
print("old median %.0f MB/s (%.0f-%.0f), new %.0f MB/s (%.0f-%.0f): new/old %.2fx"
      % (o, min(rows["old"]), max(rows["old"]), n, min(rows["new"]), max(rows["new"]), n / o))
PY
