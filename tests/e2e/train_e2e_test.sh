#!/usr/bin/env bash
# The demo, shortened: a tiny JPEG ImageFolder, 2 clairfsd ranks (mpiexec),
# 2 training ranks of an unmodified PyTorch script reading through the mounts
# for 1 epoch. Every sample read must be byte-identical to the source file,
# and the daemons' stats must show how each file got to the kernel: a READ
# they answered, or a prefetch fetch pushed into the page cache (fetches are
# not READs).
set -uo pipefail
BIN=$CLAIRFS_BIN
PY=/usr/bin/python3
$PY -c "import torch, torchvision, PIL" 2>/dev/null || { echo "SKIP: python3-torch/torchvision/pil not importable by $PY"; exit 77; }
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" e2e

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 24 --size 48 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 >/dev/null || exit 1
# The prefetcher gets the job's sampler settings: training rank r on daemon r.
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
  --prefetch-sampler torch-distributed --prefetch-root train --prefetch-seed 0 \
  --prefetch-epochs 1 --prefetch-world-size 2 --prefetch-ranks-per-node 1 \
  --prefetch-batch-size 8 --prefetch-workers 2 >"$T/daemons.log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { echo "FAIL: mounts"; cat "$T/daemons.log"; exit 1; }
"$CLAIRFS_SRC/scripts/run_ranks.sh" 2 $PY "$CLAIRFS_SRC/scripts/train.py" --data "$T/mnt{rank}/train" \
  --epochs 1 --workers 2 --batch-size 8 --image-size 32 --report "$T/report.json" \
  --sample-log "$T/samples" || { echo "FAIL: training through the mounts"; exit 1; }
cp "$T/mnt0/.clairfs/stats.json" "$T/stats0.json"
cp "$T/mnt1/.clairfs/stats.json" "$T/stats1.json"
$PY "$CLAIRFS_SRC/tests/e2e/torch_samples.py" "$T/samples" "$T/data/train" >"$T/samples.json" ||
  { echo "FAIL: a sample read through clairfs differs from the source"; exit 1; }
$PY - "$T" <<'PY'
import json, os, sys
t = sys.argv[1]
checked = json.load(open(os.path.join(t, "samples.json")))
seen, per_rank = checked["samples"], {int(r): n for r, n in checked["per_rank"].items()}
assert seen == checked["dataset"], "read %d samples, the dataset has %d" % (seen, checked["dataset"])
report = json.load(open(os.path.join(t, "report.json")))
assert len(report["epochs"]) == 1 and report["epochs"][0]["loss"] > 0
served = pushed = fetched = ready = opens = reads = 0
for r in (0, 1):
    s = json.load(open(os.path.join(t, "stats%d.json" % r)))
    answered = s["served"]["local_pack"]["reads"] + s["served"]["ram_cache"]["reads"]
    # served.* split the READs the kernel sent: never more than arrived.
    assert answered <= s["requests"]["read"], ("rank %d answered more READs than it got" % r, s["served"], s["requests"])
    served += answered
    reads += s["requests"]["read"]
    assert s["errors"]["corruption"] == 0 and s["errors"]["io"] == 0, s["errors"]
    p = s["prefetch"]
    pc = p["page_cache"]
    pushed += pc["pushes"] + pc["listed_pushes"] + pc["late_pushes"]
    fetched += p["fetched"]
    # Training rank r reads through daemon r: each of its samples is one open.
    assert p["enabled"] and p["opens"] >= per_rank[r], (per_rank, p)
    assert p["ready"] >= 0.9 * p["opens"], "rank %d: too few opens found their file: %s" % (r, p)
    w = s["open_watcher"]  # opens reached the prefetcher without a round trip
    assert w["opens_seen_through"] == "inotify" and w["overflows"] == 0, w
    assert w["events"] >= per_rank[r], (per_rank, w)
    ready += p["ready"]
    opens += p["opens"]
# Each file read reached the page cache through a READ answered or a push.
assert served + pushed >= seen, "daemons answered %d READs and pushed %d files for %d files" % (served, pushed, seen)
print("e2e: %d samples read through clairfs, all identical to the source; daemons fetched %d "
      "files and pushed %d into the page cache; %d of %d opens found their file prefetched; "
      "%d READ requests reached the daemons, %d answered with bytes (the rest of the reads came "
      "from the page cache)" % (seen, fetched, pushed, ready, opens, reads, served))
PY
rc=$?
[[ $rc -eq 0 ]] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
