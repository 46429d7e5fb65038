#!/usr/bin/env bash
# A wrong setting, and no report to correct it: 2 clairfsd ranks told a
# DistributedSampler over 4 training ranks (--prefetch-world-size 4, one rank
# per node) while the PyTorch job (tests/e2e/report_train.py, ImageFolder +
# DistributedSampler(seed=3)) runs 2, with its order reporter switched off
# (CLAIRFS_REPORT=0). Each daemon's planner loses the order in the first
# epoch; each must then name the world size that matches the job's opens, in
# stats.json (prefetch.likely_wrong) and once in its log, and clairfs-summary
# must show it. (report_e2e checks the bytes such a job reads.)
set -uo pipefail
BIN=$CLAIRFS_BIN
PY=/usr/bin/python3
$PY -c "import torch, torchvision" || { echo "FAIL: python3-torch/torchvision not importable by $PY (scripts/setup.sh installs them)"; exit 1; }
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" settings

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 150 --size 64 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 >/dev/null || exit 1
"$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
  --prefetch-sampler torch-distributed --prefetch-root train --prefetch-seed 3 --prefetch-epochs 1 \
  --prefetch-world-size 4 --prefetch-ranks-per-node 1 --prefetch-batch-size 8 --prefetch-workers 2 \
  >"$T/daemons.log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { echo "FAIL: mounts"; cat "$T/daemons.log"; exit 1; }
CLAIRFS_REPORT=0 PYTHONPATH="$BIN/report" "$CLAIRFS_SRC/scripts/run_ranks.sh" 2 \
  $PY "$CLAIRFS_SRC/tests/e2e/report_train.py" --data "$T/mnt{rank}/train" --dataset imagefolder \
  --sampler distributed --epochs 1 --workers 2 --batch-size 8 --seed 3 --step-ms 0 \
  --log "$T/job" 2>"$T/job.err" || { echo "FAIL: the job"; cat "$T/job.err"; exit 1; }
for r in 0 1; do cp "$T/mnt$r/.clairfs/stats.json" "$T/stats-node$r.json"; done
kill -TERM "$launcher"; wait "$launcher"; launcher=""
"$BIN/clairfs-summary" "$T"/stats-node?.json >"$T/summary" 2>&1
$PY - "$T" <<'PY' || { cat "$T/daemons.log"; exit 1; }
import json, os, sys
t = sys.argv[1]
log = open(os.path.join(t, "daemons.log")).read()
summary = open(os.path.join(t, "summary")).read()
for r in (0, 1):
    p = json.load(open(os.path.join(t, "stats-node%d.json" % r)))["prefetch"]
    assert p["sampler"] == "torch-distributed" and p["lost"], p
    assert p["likely_wrong"] == "prefetch_world_size=2", "daemon %d: likely_wrong %r" % (r, p["likely_wrong"])
    line = "clairfsd[%d]" % r
    said = [l for l in log.splitlines() if l.startswith(line) and "prefetch_world_size=2 (configured: 4)" in l]
    assert len(said) == 1, "daemon %d said it %d times:\n%s" % (r, len(said), log)
    assert "node%d: prefetch.likely_wrong: prefetch_world_size=2" % r in summary, summary
    print("ok: daemon %d: %s" % (r, said[0]))
PY
echo "PASS: a wrong prefetch_world_size is named"
