#!/usr/bin/env bash
# A Horovod + Keras job of the tutorials' pattern A, unmodified, through
# clairfs: ImageDataGenerator(augmentation).flow_from_directory(seed=42) on
# every rank, model.fit(it, steps_per_epoch=len(it) // 2) with fit's default
# shuffle=True. 2 clairfsd ranks (mpiexec), 2 training ranks (rank r reads
# mount r), real JPEGs, 3 epochs, on both lines:
#   tf-keras2   TF 2.15.1 + Keras 2.15 + Horovod 0.28.1 (gradients averaged)
#   tf-current  TF 2.21 + Keras 3.15, ranks from MPICH's environment
#
# The daemons are told the job's settings (sampler keras-flow, protocol fit,
# the augmentation, steps_per_epoch): every epoch reaches the planner as a set
# of batches (batch mode; epochs after the first as the slices of several
# candidate index arrays, tf.data's read-ahead racing on_epoch_end), and the
# first open of a batch pins it. Checked:
#  - every file each batch was made of, read back through the mount by the
#    batch itself, has the bytes of the source file;
#  - in every epoch after the first >= 99% of each node's opens found their
#    file ready, with 0 stalls; batch mode ran and pinned batches;
#  - the same run on the source tree: where it drew the same batches (its
#    permutations depend on how far tf.data read ahead when on_epoch_end ran,
#    a race in Keras, not in clairfs), every sample the model received and
#    every loss are identical. The direct run is repeated up to 3 times to
#    find such a run; if none drew the same batches, that is reported and the
#    loss comparison is not made.
# A missing venv skips (77), or fails when CI=true.
set -uo pipefail
BIN=$CLAIRFS_BIN
source "$CLAIRFS_SRC/tests/tf/venvs_lib.sh" tf-keras2 tf-current
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" keras-flow-e2e
PY=/usr/bin/python3
SCRIPT=$CLAIRFS_SRC/scripts/keras/train_flow.py
EPOCHS=3 BATCH=8
AUGMENT="horizontal_flip=1,rotation_range=10,width_shift_range=0.1,zoom_range=0.1"
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 30 --size 48 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 --compress none >/dev/null || exit 1
# 120 images in batches of 8: len(it) = 15, steps_per_epoch = 15 // 2 = 7.
STEPS=7

# train TAG DATA0 DATA1: 2 ranks of $venv (Horovod on the Keras 2 line), rank r on DATAr.
train() {
  local py=$VENVS/$venv/bin/python
  local args=(--epochs $EPOCHS --batch-size $BATCH --image-size 32 --seed 42 --deterministic)
  timeout 600 "$MPIEXEC" -n 1 "$py" "$SCRIPT" "$2" "${args[@]}" --report "$T/$1.json" --sample-log "$T/$1.samples" \
    : -n 1 "$py" "$SCRIPT" "$3" "${args[@]}" --sample-log "$T/$1.samples" >"$T/$1.log" 2>&1
}

for line in tf-keras2:2.15 tf-current:3.15; do
  venv=${line%%:*} version=${line##*:}
  # Batches each rank reads at least: tf.keras 2 trains on 7 of a new pass
  # each epoch, after 1 for the tensor spec; Keras 3 keeps one pass of 15
  # (epochs of 7, 7, 1), after 2 for the spec.
  [[ $venv == tf-keras2 ]] && least=$((STEPS * EPOCHS + 1)) || least=$((15 + 2))
  rm -rf "$T"/mnt* "$T"/ssd* "$T"/clairfs.* "$T"/stats*.json
  "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
    --prefetch-sampler keras-flow --prefetch-root train --prefetch-seed 42 --prefetch-keras-version "$version" \
    --prefetch-batch-size $BATCH --prefetch-protocol fit --prefetch-augment "$AUGMENT" \
    --prefetch-steps-per-epoch $STEPS --prefetch-epochs $EPOCHS --prefetch-world-size 2 \
    >"$T/daemons-$venv.log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { fail "$venv: mounts"; cat "$T/daemons-$venv.log"; break; }
  train clairfs "$T/mnt0/train" "$T/mnt1/train" || { fail "$venv: training through the mounts"; tail -20 "$T/clairfs.log"; }
  # inotify reports opens after the fact: wait until both counts stop moving.
  $PY - "$T/mnt0/.clairfs/stats.json" "$T/mnt1/.clairfs/stats.json" <<'PY'
import json, sys, time
last, still = None, 0
for _ in range(200):
    now = [json.load(open(p))["prefetch"]["opens"] for p in sys.argv[1:]]
    still = still + 1 if now == last else 0
    if still >= 10:
        break
    last = now
    time.sleep(0.1)
PY
  cp "$T/mnt0/.clairfs/stats.json" "$T/stats0.json"
  cp "$T/mnt1/.clairfs/stats.json" "$T/stats1.json"
  kill -TERM "$launcher"; wait "$launcher" || fail "$venv: the daemons did not stop cleanly"; launcher=""

  # Bytes: each file named in the batch logs against the source.
  $PY - "$T" "$BATCH" "$least" <<'PY' && pass "$venv: every file of every batch read through the mounts has the source's bytes" || fail "$venv: bytes, see above"
import hashlib, sys
t, batch, least = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True
for r in (0, 1):
    files = batches = 0
    for line in open("%s/clairfs.samples.rank%d.files" % (t, r)):
        kind, rest = line.rstrip("\n").split(" ", 1)
        if kind == "batch":
            batches += 1
            continue
        name, digest = line.rstrip("\n").rsplit(" ", 1)
        want = hashlib.blake2b(open("%s/data/train/%s" % (t, name), "rb").read(), digest_size=8).hexdigest()
        files += 1
        if digest != want:
            print("rank %d: %s read %s through the mount, the source has %s" % (r, name, digest, want))
            ok = False
    # tf.data may read a few batches ahead that are never trained on.
    print("rank %d: %d batches, %d files checked" % (r, batches, files))
    ok &= batches >= least and files >= least * batch
sys.exit(0 if ok else 1)
PY

  # Readiness per node and epoch.
  $PY - "$T" "$EPOCHS" <<'PY' && pass "$venv: readiness after the first epoch, 0 stalls, batch mode" || fail "$venv: readiness, see above"
import json, sys
t, epochs = sys.argv[1], int(sys.argv[2])
ok = True
for node in (0, 1):
    p = json.load(open("%s/stats%d.json" % (t, node)))["prefetch"]
    print("node %d: batch_mode %s, batches pinned %s (ready at pin %s)"
          % (node, p.get("batch_mode"), p["batches"]["pinned"], p["batches"]["ready_at_pin"]))
    ok &= p.get("batch_mode") is True and p["batches"]["pinned"] > 0
    for e in p["per_epoch"]:
        print("node %d epoch %d: opens %d ready %d stalls %d deviations %d"
              % (node, e["epoch"], e["opens"], e["ready"], e["stalls"], e["deviations"]))
        if e["epoch"] >= 1 and (e["ready"] < 0.99 * e["opens"] or e["stalls"] != 0):
            ok = False
    print("node %d: peak %d of a %d-byte budget" % (node, p["peak_used_bytes"], p["budget_bytes"]))
    ok &= p["peak_used_bytes"] <= p["budget_bytes"]
    ok &= len([e for e in p["per_epoch"] if e["epoch"] >= 1 and e["opens"] > 0]) >= 1
sys.exit(0 if ok else 1)
PY

  # The same run on the source tree: samples and losses where it drew the same batches.
  compared=""
  for attempt in 1 2 3; do
    rm -f "$T"/direct.*
    train direct "$T/data/train" "$T/data/train" || { fail "$venv: training on the source"; tail -20 "$T/direct.log"; break; }
    if $PY - "$T" <<'PY'; then compared=$attempt; break; fi
import sys
t = sys.argv[1]
def batches(tag, r):
    return [l for l in open("%s/%s.samples.rank%d.files" % (t, tag, r)) if l.startswith("batch ")]
sys.exit(0 if all(batches("clairfs", r) == batches("direct", r) for r in (0, 1)) else 1)
PY
    echo "$venv: direct run $attempt drew other batches than the run through the mounts (tf.data's read-ahead raced on_epoch_end)"
  done
  if [[ -n $compared ]]; then
    $PY - "$T" <<'PY' && pass "$venv: direct run $compared drew the same batches: every sample and every loss identical" || fail "$venv: samples or losses, see above"
import json, sys
t = sys.argv[1]
ok = True
for r in (0, 1):
    a = open("%s/clairfs.samples.rank%d" % (t, r)).read().split("\n")
    b = open("%s/direct.samples.rank%d" % (t, r)).read().split("\n")
    print("rank %d: %d samples through clairfs, %d direct, identical: %s" % (r, len(a) - 1, len(b) - 1, a == b))
    ok &= a == b and len(a) > 1
la = [e["loss"] for e in json.load(open("%s/clairfs.json" % t))["epochs"]]
lb = [e["loss"] for e in json.load(open("%s/direct.json" % t))["epochs"]]
print("losses through clairfs %s, direct %s" % (la, lb))
ok &= la == lb and len(la) > 0
sys.exit(0 if ok else 1)
PY
  else
    echo "$venv: note: no direct run drew the same batches in 3 tries; samples and losses not compared"
  fi
done

echo "$failures failures"
[[ $failures -eq 0 ]]
