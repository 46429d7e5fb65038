#!/usr/bin/env bash
# stats.json is what docs/fuse.md says it is: a 2-rank job with staging, a
# sampler, inotify and a writable area writes a document that parses, every field it writes
# is documented there, and every documented field is written (except those
# whose row says "Only when..." a setting this job lacks).
set -uo pipefail
BIN=$CLAIRFS_BIN
PY=/usr/bin/python3
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" stats

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 3 --per-class 20 --size 32 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 >/dev/null || exit 1
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
  --prefetch-sampler torch-distributed --prefetch-root train --prefetch-seed 0 \
  --prefetch-epochs 1 --prefetch-world-size 2 --prefetch-ranks-per-node 1 \
  --prefetch-batch-size 4 --prefetch-workers 1 \
  --writes-dir outputs --writes-local "$T/wl{rank}" --writes-persist "$T/wp" >"$T/daemons.log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { echo "FAIL: mounts"; cat "$T/daemons.log"; exit 1; }
# The watches come up just after the mount; opens of every file then fill
# each section (reads cross ranks: each rank stages half the packs).
for i in $(seq 1 100); do
  grep -q '"opens_seen_through": "inotify"' "$T/mnt0/.clairfs/stats.json" \
    && grep -q '"opens_seen_through": "inotify"' "$T/mnt1/.clairfs/stats.json" && break
  sleep 0.1
done
for r in 0 1; do
  diff -r --exclude outputs "$T/data" "$T/mnt$r" >/dev/null || { echo "FAIL: mount $r differs from the source"; exit 1; }
  cp "$T/mnt$r/.clairfs/stats.json" "$T/stats$r.json"
done
$PY - "$CLAIRFS_SRC/docs/fuse.md" "$T"/stats?.json <<'PY' || exit 1
import json, re, sys

def documented(path):
    """{field: optional} from the tables of the stats.json section."""
    text = open(path).read()
    text = text[text.index("\n## stats.json"):]
    text = text[:text.index("\n## ", 1)]
    fields, prefix = {}, ""
    for line in text.splitlines():
        m = re.match(r"### The `(\w+)` section", line)
        if m:
            prefix = m.group(1) + "."
        if not line.startswith("| `"):
            continue
        cells = line.split("|")
        optional = cells[2].strip().startswith("Only")
        prev = ""
        for name in re.findall(r"`([^`]+)`", cells[1]):
            if name.startswith("."):
                name = prev[:prev.rindex(".") + 1] + name[1:]
            prev = name
            fields[prefix + name] = optional
    return fields

def written(value, path=""):
    if isinstance(value, dict):
        out = set()
        for k, v in value.items():
            out |= written(v, path + "." + k if path else k)
        return out
    if isinstance(value, list):
        out = set()
        for v in value:
            out |= written(v, path + "[]")
        return out or {path + "[]"}
    return {path}

doc = documented(sys.argv[1])
assert len(doc) > 80, "found only %d documented fields: the tables' format changed?" % len(doc)
for f in sys.argv[2:]:
    stats = json.load(open(f))  # parses, or the test fails here
    got = written(stats)
    undocumented = sorted(got - set(doc))
    missing = sorted(k for k, optional in doc.items() if not optional and k not in got)
    assert not undocumented, "%s writes fields docs/fuse.md does not name: %s" % (f, undocumented)
    assert not missing, "%s lacks documented fields: %s" % (f, missing)
    assert stats["cluster"]["ranks"] == 2 and stats["open_watcher"]["opens_seen_through"] == "inotify"
    assert stats["cluster"]["network"]["reads_sent"] > 0, stats["cluster"]
    assert stats["cluster"]["network"]["reads_sent"] >= stats["cluster"]["peers"]["reads"], stats["cluster"]
    print("ok   %s: %d fields, all documented; every documented field there" % (f, len(got)))
PY
kill -TERM "$launcher"; wait "$launcher" || { echo "FAIL: exit after SIGTERM"; cat "$T/daemons.log"; exit 1; }
launcher=""
echo "PASS: stats.json matches docs/fuse.md"
