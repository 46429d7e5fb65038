#!/usr/bin/env bash
# A Horovod + Keras job of the tutorials' pattern B, unmodified, through
# clairfs: image_dataset_from_directory(batch_size=1, seed) sharded after
# loading, so every rank opens every file. 2 clairfsd ranks (mpiexec), 2
# training ranks (rank r reads mount r), real JPEGs, 3 epochs, on both lines:
#   tf-keras2   TF 2.15.1 + Keras 2.15 + Horovod 0.28.1 (gradients averaged)
#   tf-current  TF 2.21 + Keras 3.15, ranks from MPICH's environment
# The daemons are told the job's settings (sampler keras; the script's
# --deterministic calls keras.utils.set_random_seed(42), which is also
# tf.random.set_seed(42): prefetch_global_seed; one stream shared by the
# node's readers); their budget holds the dataset (a budget below it stalls
# under tf.data's read-ahead: the planner issue). Checked: every
# sample the model received has the same hash as in the same run on the
# source tree, the losses are equal, and in every epoch after the first >= 99%
# of each node's opens found their file ready, with 0 stalls and 0
# deviations. A missing venv skips (77), or fails when CI=true.
set -uo pipefail
BIN=$CLAIRFS_BIN
source "$CLAIRFS_SRC/tests/tf/venvs_lib.sh" tf-keras2 tf-current
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" keras-e2e
PY=/usr/bin/python3
SCRIPT=$CLAIRFS_SRC/scripts/keras/train_dataset.py
EPOCHS=3
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 30 --size 48 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 --compress none >/dev/null || exit 1

# train VENV TAG DATA0 DATA1: 2 ranks, rank r on DATAr.
train() {
  local py=$VENVS/$1/bin/python args=(--epochs $EPOCHS --batch-size 8 --image-size 32 --seed 42 --deterministic)
  timeout 600 "$MPIEXEC" -n 1 "$py" "$SCRIPT" "$3" "${args[@]}" --report "$T/$2.json" --sample-log "$T/$2.samples" \
    : -n 1 "$py" "$SCRIPT" "$4" "${args[@]}" --sample-log "$T/$2.samples" >"$T/$2.log" 2>&1
}

for line in tf-keras2:2.15 tf-current:3.15; do
  venv=${line%%:*} version=${line##*:}
  rm -rf "$T"/mnt* "$T"/ssd*
  "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
    --prefetch-sampler keras --prefetch-root train --prefetch-seed 42 --prefetch-keras-version "$version" \
    --prefetch-global-seed 42 --prefetch-batch-size 1 --prefetch-epochs $EPOCHS --prefetch-world-size 2 \
    >"$T/daemons-$venv.log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { fail "$venv: mounts"; cat "$T/daemons-$venv.log"; break; }
  train "$venv" "$venv-clairfs" "$T/mnt0/train" "$T/mnt1/train" || { fail "$venv: training through the mounts"; tail -20 "$T/$venv-clairfs.log"; }
  cp "$T/mnt0/.clairfs/stats.json" "$T/$venv-stats0.json"
  cp "$T/mnt1/.clairfs/stats.json" "$T/$venv-stats1.json"
  kill -TERM "$launcher"; wait "$launcher"; launcher=""
  train "$venv" "$venv-direct" "$T/data/train" "$T/data/train" || { fail "$venv: training on the source"; tail -20 "$T/$venv-direct.log"; }
  $PY - "$T" "$venv" "$EPOCHS" <<'PY' && pass "$venv: samples, losses and readiness" || fail "$venv: see above"
import json, sys
t, venv, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
ok = True
for r in (0, 1):
    a = open("%s/%s-clairfs.samples.rank%d" % (t, venv, r)).read().split("\n")
    b = open("%s/%s-direct.samples.rank%d" % (t, venv, r)).read().split("\n")
    if a != b or len(a) < 2:
        print("rank %d: %d samples through clairfs, %d direct, identical: %s" % (r, len(a), len(b), a == b))
        ok = False
    else:
        print("rank %d: %d samples, every one identical to the run on the source" % (r, len(a) - 1))
la = [e["loss"] for e in json.load(open("%s/%s-clairfs.json" % (t, venv)))["epochs"]]
lb = [e["loss"] for e in json.load(open("%s/%s-direct.json" % (t, venv)))["epochs"]]
print("losses through clairfs %s, direct %s" % (la, lb))
ok &= la == lb and len(la) == epochs
for node in (0, 1):
    p = json.load(open("%s/%s-stats%d.json" % (t, venv, node)))["prefetch"]
    for e in p["per_epoch"]:
        print("node %d epoch %d: opens %d ready %d stalls %d deviations %d resyncs %d"
              % (node, e["epoch"], e["opens"], e["ready"], e["stalls"], e["deviations"], e["resyncs"]))
        if e["epoch"] >= 1 and (e["ready"] < 0.99 * e["opens"] or e["stalls"] != 0
                                 or e["deviations"] != 0):
            ok = False
    print("node %d: peak %d of a %d-byte budget" % (node, p["peak_used_bytes"], p["budget_bytes"]))
    ok &= p["peak_used_bytes"] <= p["budget_bytes"]
    ok &= [e["epoch"] for e in p["per_epoch"]] == list(range(epochs))
sys.exit(0 if ok else 1)
PY
done

echo "$failures failures"
[[ $failures -eq 0 ]]
