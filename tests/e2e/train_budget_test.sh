#!/usr/bin/env bash
# The prefetcher with a budget a third of the dataset: an unmodified DDP
# script (DistributedSampler seed 5, batch 16, 2 loader workers, 3 epochs) as
# 2 training ranks over 2 daemons, 600 JPEGs, ram_cache (the daemons' one
# budget for file bytes) set to a third of the dataset's bytes. The budget
# holds about 200 files while each rank's loader keeps at most 64 in flight,
# so the planner must keep >= 99% of the opens ready with no stall after the
# first epoch, never go over the budget, and every sample must be the
# source's bytes. Each daemon's peak resident memory is printed next to the
# budget (docs/prefetch.md, "Memory").
set -uo pipefail
BIN=$CLAIRFS_BIN
PY=/usr/bin/python3
$PY -c "import torch, torchvision, PIL" 2>/dev/null || { echo "SKIP: python3-torch/torchvision/pil not importable by $PY"; exit 77; }
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" budget

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 6 --per-class 100 --size 64 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 >/dev/null || exit 1
BYTES=$(find "$T/data/train" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
BUDGET=$((BYTES / 3))
echo "dataset: 600 files, $BYTES bytes; budget $BUDGET bytes"
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
  --ram-cache "$BUDGET" --prefetch-sampler torch-distributed --prefetch-root train \
  --prefetch-seed 5 --prefetch-epochs 3 --prefetch-world-size 2 --prefetch-ranks-per-node 1 \
  --prefetch-batch-size 16 --prefetch-workers 2 >"$T/daemons.log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { echo "FAIL: mounts"; cat "$T/daemons.log"; exit 1; }
"$CLAIRFS_SRC/scripts/run_ranks.sh" 2 $PY "$CLAIRFS_SRC/scripts/train.py" --data "$T/mnt{rank}/train" \
  --epochs 3 --workers 2 --batch-size 16 --seed 5 --image-size 32 --report "$T/report.json" \
  --sample-log "$T/samples" || { echo "FAIL: training through the mounts"; cat "$T/daemons.log"; exit 1; }
for r in 0 1; do cp "$T/mnt$r/.clairfs/stats.json" "$T/stats$r.json"; done
for pid in $(pgrep -f "^$BIN/clairfsd --dataset $T/packed"); do
  grep -E '^Vm(HWM|RSS)' "/proc/$pid/status" | tr -s ' \n' ' '; echo
done >"$T/memory"
$PY "$CLAIRFS_SRC/tests/e2e/torch_samples.py" "$T/samples" "$T/data/train" >"$T/samples.json" ||
  { echo "FAIL: a sample read through clairfs differs from the source"; exit 1; }
$PY - "$T" "$BUDGET" <<'PY'
import json, os, sys
t, budget = sys.argv[1], int(sys.argv[2])
checked = json.load(open(os.path.join(t, "samples.json")))
seen = checked["samples"]
assert seen == 3 * checked["dataset"], "read %d samples in 3 epochs of %d" % (seen, checked["dataset"])
for r in (0, 1):
    s = json.load(open(os.path.join(t, "stats%d.json" % r)))
    p, cache = s["prefetch"], s["ram_cache"]
    print("daemon %d: opens %d ready %d stalls %d deviations %d; fetched %d evictions %d admitted %d; "
          "cache kept by %s, peak %d of %d bytes; per epoch %s"
          % (r, p["opens"], p["ready"], p["stalls"], p["deviations"], p["fetched"], p["evictions"],
             p["admitted"], cache["kept_by"], cache["peak_bytes"], budget,
             [(e["epoch"], e["opens"], e["ready"], e["stalls"]) for e in p["per_epoch"]]))
    assert p["enabled"] and not p["lost"] and p["deviations"] == 0, p
    assert cache["kept_by"] == "planner" and cache["capacity_bytes"] == budget, cache
    assert cache["peak_bytes"] <= budget and p["peak_used_bytes"] <= budget, (cache, p)
    assert p["evictions"] > 0, "a third of the dataset must evict"
    assert p["opens"] >= 3 * 300, p  # inotify may merge, but each rank opens its 300 once an epoch
    assert p["ready"] >= 0.99 * p["opens"], "daemon %d: fewer than 99%% of opens ready" % r
    for e in p["per_epoch"]:
        assert e["epoch"] == 0 or e["stalls"] == 0, "daemon %d stalled in epoch %d: %s" % (r, e["epoch"], e)
    assert s["errors"]["corruption"] == 0 and s["errors"]["io"] == 0, s["errors"]
for line in open(os.path.join(t, "memory")):
    print("daemon memory:", line.strip())
print("budget e2e: %d samples read in 3 epochs, all identical to the source" % seen)
PY
rc=$?
[[ $rc -eq 0 ]] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
