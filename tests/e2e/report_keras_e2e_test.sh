#!/usr/bin/env bash
# Zero configuration, Keras: the Horovod + Keras tutorial's pattern A
# (ImageDataGenerator.flow_from_directory + fit(steps_per_epoch), batch order
# drawn each epoch from Python's unseeded random) on 2 ranks, each reading
# through its own clairfsd given no prefetch settings, ram_cache a third of
# the dataset, the order reporter on the job's PYTHONPATH. Every epoch is
# reported as fit begins it (tf.keras 2: a pass drawn each epoch; Keras 3: one
# pass serves 2-3 epochs, its later epochs reported with the index arrays
# their batches read, docs/report.md), so no open is a deviation and every
# open after the first epoch but at most 2 batches an epoch finds its file
# ready. Keras 3: tf.data's autotuned prefetch reads a mid-pass epoch's first
# batches before on_epoch_end draws its array; the GUESS sent one epoch
# earlier names them. Each training step takes STEP_MS=10 ms more, as a
# model's would: with none, on this 2-core machine the kernel left the
# daemons without a CPU for 0.1 s at times (docs/prefetch.md, "CPU") and 19
# and 23 stalls were seen in 2 of about 50 Keras 3 node-epochs. Under
# fit(workers=4) the enqueuer's 4 threads read its queue of 10 batches as
# soon as the epoch's order is drawn: at most those 14 batches the first
# evaluation may wait, and a training epoch (foreseen as the epoch before
# ended, docs/report.md "The next epoch, foreseen": 0-1 waited in 47 of 48
# node-epochs over 8 runs, 34 in one). A later evaluation, foreseen a
# training epoch early: at most 2 batches (0 in 96 node-epochs). The +seq
# cases read through the script's own Sequence (Keras 3: PyDataset), with and
# without 4 workers: the same bounds, after the epoch that learns its batches'
# files (the prefetcher's epochs start with the first reported one).
# tf-current+val validates as the workers=4 cases do, on Keras 3: its
# evaluation draws its array as it begins (EpochIterator.reset), so it is
# reported then, and it first reads its iterator's first 2 batches to learn
# their shape before any report (those 16 opens are counted unreported, and
# their files' opens in the evaluation are the evaluation's).
# A missing venv skips (77), or fails when CI=true.
set -uo pipefail
BIN=$CLAIRFS_BIN
source "$CLAIRFS_SRC/tests/tf/venvs_lib.sh" tf-keras2 tf-current
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" report-keras
PY=/usr/bin/python3
SCRIPT=$CLAIRFS_SRC/scripts/keras/train_flow.py
EPOCHS=4 BATCH=8
$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 160 --size 48 >/dev/null || exit 1
$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/v" --classes 4 --per-class 40 --size 48 --seed 9 >/dev/null || exit 1
mv "$T/v/train" "$T/data/val"
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 --compress none >/dev/null || exit 1
bytes=$(find "$T/data" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
fail=0
# CASE: VENV[:WORKERS] - fit(workers=4) is Horovod's Keras ImageNet example's
# (tf.keras 2: an OrderedEnqueuer whose 4 threads load the batches), run as
# that example does: validating on another directory every epoch with
# validation_steps = 3 x its batches // ranks (1.5 passes over it).
# VENV[:WORKERS]+seq: the script's own Sequence (PyDataset), sharded by rank
# (train_flow.py --sequence), no validation: its batches' files are learned in
# epoch 0. VENV+val: validation as above without workers.
for case in tf-keras2 tf-keras2:4 tf-current tf-current+val tf-keras2+seq tf-current+seq \
  tf-keras2:4+seq tf-current:4+seq; do
  # REPORT_KERAS_CASES (a regex of case names) runs some of them only.
  [[ $case =~ ^(${REPORT_KERAS_CASES:-.*})$ ]] || continue
  base=${case%+*} venv=${case%%[:+]*} workers=1 seq=() val=()
  [[ $base == *:* ]] && workers=${base##*:}
  [[ $case == *+seq ]] && seq=(--sequence)
  [[ $case == *+val || ( $workers -gt 1 && $case != *+seq ) ]] && val=(--val-data)
  rm -rf "$T"/mnt* "$T"/ssd*
  "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
    --ram-cache $((bytes / 3)) >"$T/daemons-$case.log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { echo "FAIL $case: mounts"; fail=1; break; }
  py=$VENVS/$venv/bin/python
  args=(--epochs $EPOCHS --batch-size $BATCH --image-size 32 --seed 42 --deterministic --workers "$workers"
    --step-ms "${STEP_MS:-10}" ${seq[@]+"${seq[@]}"})
  PYTHONPATH=$BIN/report timeout 600 "$MPIEXEC" -n 1 "$py" "$SCRIPT" "$T/mnt0/train" "${args[@]}" ${val:+"${val[@]}" "$T/mnt0/val"} \
    : -n 1 "$py" "$SCRIPT" "$T/mnt1/train" "${args[@]}" ${val:+"${val[@]}" "$T/mnt1/val"} >"$T/train-$case.log" 2>&1 ||
    { echo "FAIL $case: training"; tail -20 "$T/train-$case.log"; fail=1; }
  sleep 1  # inotify reports opens after the fact
  for r in 0 1; do cp "$T/mnt$r/.clairfs/stats.json" "$T/stats$r.json"; cp "$T/stats$r.json" "$T/stats-$case-$r.json"; done
  kill -TERM "$launcher"; wait "$launcher"; launcher=""
  burst=2
  [[ $workers -gt 1 ]] && burst=$((10 + workers))  # fit's max_queue_size + workers
  $PY - "$T" "$case" "$((burst * BATCH))" "$((2 * BATCH))" <<'PY' || fail=1
import json, sys
t, venv, may_wait, guessed_may_wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ok = True
log = open("%s/train-%s.log" % (t, venv)).read()
if "clairfs-report" in log:
    print("FAIL %s: the reporter gave up: %s" % (venv, log[log.index("clairfs-report"):][:200]))
    ok = False
for r in (0, 1):
    s = json.load(open("%s/stats%d.json" % (t, r)))
    p, rep = s["prefetch"], s["report"]
    if p.get("sampler") != "reported" or p["deviations"] != 0 or rep["connections_closed_bad"] != 0:
        print("FAIL %s daemon %d: %s / %s" % (venv, r, {k: p.get(k) for k in ("sampler", "deviations", "first_deviation")}, rep))
        ok = False
        continue
    for e in p["per_epoch"]:
        print("%s daemon %d epoch %d: %d of %d opens ready, %d stalls; %d unreported opens in all"
              % (venv, r, e["epoch"], e["ready"], e["opens"], e["stalls"], p["unreported_opens"]))
    epochs = [e for e in p["per_epoch"] if e["epoch"] >= 1]
    # the validation (the second loader) after its first epoch: tf.keras 2 guessed in time,
    # Keras 3 reported as the evaluation draws its array
    bound = lambda e: guessed_may_wait if e["loader"] == 2 and e["loader_epoch"] >= 1 else may_wait
    if len(epochs) < 2 or any(e["stalls"] > bound(e) or e["deviations"] for e in epochs):
        print("FAIL %s daemon %d: epochs after the first not ready" % (venv, r))
        ok = False
    if venv.endswith("+val"):
        # Keras 3: each evaluation reads the 160 validation files once (one pass; fit stops
        # at its end); the 2 batches read to learn their shape are the only opens unreported
        val = [e["opens"] for e in p["per_epoch"] if e["loader"] == 2]
        if len(val) != 4 or set(val) != {160} or p["unreported_opens"] > guessed_may_wait:
            print("FAIL %s daemon %d: evaluations' opens %s, %d unreported"
                  % (venv, r, val, p["unreported_opens"]))
            ok = False
sys.exit(0 if ok else 1)
PY
done
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
