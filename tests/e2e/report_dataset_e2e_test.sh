#!/usr/bin/env bash
# Zero configuration, tf.data, on 2 ranks, each reading through its own
# clairfsd given no prefetch settings, the order reporter on the job's
# PYTHONPATH. The reporter sends the dataset's settings and each iteration's
# start (SETTINGS, EPOCH: docs/report.md); the daemons' models make the
# orders. The Horovod + Keras tutorials' pattern B (train_dataset.py:
# image_dataset_from_directory(batch_size=1) sharded after loading, so every
# rank opens every file):
#   keras2-seeded        tf.keras 2, Horovod, seed=42, --deterministic
#   keras2-numpy-seed    the same with seed=None: Keras draws the seed from
#                        NumPy's global generator (seeded by --deterministic)
#   keras3-unseeded      Keras 3, seed=None and nothing seeded at all
# The tf.data guide's pipeline (train_files.py: list_files(seed) sharded, a
# parallel map reading the files, batch, prefetch; each rank opens its shard):
#   files-keras3-seeded  Keras 3, seed=42, --deterministic
#   files-keras2-global  tf.keras 2, Horovod, seed=None under a global seed
#   files-keras3-unseeded Keras 3, seed=None and nothing seeded (the reporter
#                        seeds list_files from os.urandom where TF would at random)
# ram_cache holds a third of the dataset (PART=3) of 1,200 files
# (PER_CLASS=300: a third of 120 files held less than tf.data's autotuned
# read-ahead), and each training step takes STEP_MS=10 ms more, as a model's
# step would: without it TensorFlow reads 4,000 files a second from the page
# cache on this 2-core VM, a third of the dataset is 0.1 s ahead, and the
# kernel sometimes leaves the daemons' threads runnable for 100-180 ms while
# TF keeps both cores (each mpiexec rank is its own session, so autogroup
# scheduling shares the CPUs between sessions): 4 of 20 runs of
# keras3-unseeded then had 14-732 later opens wait (0 of 24 with
# kernel.sched_autogroup_enabled=0; docs/prefetch.md, "CPU"). With 10 ms
# steps, 24 runs had 0-1 wait per node-epoch.
# Checked: the seeded runs' samples and losses equal a run on the source
# tree; in every run the daemons made the model (report.models, no model
# error), followed it (prefetch.sampler reported) with no deviation, and
# each node's opens after the first epoch were ready but at most 2 an epoch.
# A missing venv skips (77), or fails when CI=true.
set -uo pipefail
BIN=$CLAIRFS_BIN
source "$CLAIRFS_SRC/tests/tf/venvs_lib.sh" tf-keras2 tf-current
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" report-dataset
PY=/usr/bin/python3
EPOCHS=3
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class "${PER_CLASS:-300}" --size 48 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 --compress none >/dev/null || exit 1


bytes=$(find "$T/data/train" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

# train VENV TAG DATA0 DATA1 ARGS...: 2 ranks, rank r on DATAr, the reporter on the path.
train() {
  local py=$VENVS/$1/bin/python tag=$2 d0=$3 d1=$4
  local script=$CLAIRFS_SRC/scripts/keras/$SCRIPT
  shift 4
  local args=(--epochs $EPOCHS --batch-size 8 --image-size 32 --step-ms "${STEP_MS:-10}" "$@")
  PYTHONPATH=$BIN/report timeout 600 "$MPIEXEC" \
    -n 1 "$py" "$script" "$d0" "${args[@]}" --report "$T/$tag.json" --sample-log "$T/$tag.samples" \
    : -n 1 "$py" "$script" "$d1" "${args[@]}" --sample-log "$T/$tag.samples" >"$T/$tag.log" 2>&1
}

# run NAME VENV COMPARE PART ARGS...: through 2 daemons given no settings,
# ram_cache 1/PART of the dataset (and, when COMPARE is 1, on the source
# too), then the checks.
run() {
  local name=$1 venv=$2 compare=$3 ram=$((bytes / $4))
  shift 4
  # REPORT_DATASET_CASES (a regex of case names) runs some of them only.
  [[ $name =~ ^(${REPORT_DATASET_CASES:-.*})$ ]] || return 0
  rm -rf "$T"/mnt* "$T"/ssd*
  "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" \
    --ram-cache "$ram" >"$T/daemons-$name.log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$T/mnt0" "$T/mnt1" --timeout 60 --quiet || { fail "$name: mounts"; cat "$T/daemons-$name.log"; return; }
  train "$venv" "$name-clairfs" "$T/mnt0/train" "$T/mnt1/train" "$@" ||
    { fail "$name: training through the mounts"; tail -20 "$T/$name-clairfs.log"; }
  sleep 1  # inotify reports opens after the fact
  for r in 0 1; do cp "$T/mnt$r/.clairfs/stats.json" "$T/$name-stats$r.json"; done
  kill -TERM "$launcher"; wait "$launcher"; launcher=""
  if [[ $compare == 1 ]]; then
    train "$venv" "$name-direct" "$T/data/train" "$T/data/train" "$@" ||
      { fail "$name: training on the source"; tail -20 "$T/$name-direct.log"; }
  fi
  $PY - "$T" "$name" "$EPOCHS" "$compare" <<'PY' && pass "$name" || fail "$name: see above"
import json, sys
t, name, epochs, compare = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
ok = True
log = open("%s/%s-clairfs.log" % (t, name)).read()
if "clairfs-report" in log:
    print("the reporter gave up: " + log[log.index("clairfs-report"):][:300])
    ok = False
if compare:
    for r in (0, 1):
        a = open("%s/%s-clairfs.samples.rank%d" % (t, name, r)).read().split("\n")
        b = open("%s/%s-direct.samples.rank%d" % (t, name, r)).read().split("\n")
        print("rank %d: %d samples through clairfs, %d on the source, identical: %s"
              % (r, len(a) - 1, len(b) - 1, a == b))
        ok &= a == b and len(a) > 1
    la = [e["loss"] for e in json.load(open("%s/%s-clairfs.json" % (t, name)))["epochs"]]
    lb = [e["loss"] for e in json.load(open("%s/%s-direct.json" % (t, name)))["epochs"]]
    print("losses through clairfs %s, on the source %s" % (la, lb))
    ok &= la == lb and len(la) == epochs
for node in (0, 1):
    s = json.load(open("%s/%s-stats%d.json" % (t, name, node)))
    p, rep = s["prefetch"], s["report"]
    print("node %d: sampler %s, models %d, model errors %d %s, deviations %d %s, peak %d of %d bytes"
          % (node, p.get("sampler"), rep["models"], rep["model_errors"], rep["first_model_error"],
             p["deviations"], p.get("first_deviation", ""), p["peak_used_bytes"], p["budget_bytes"]))
    ok &= p.get("sampler") == "reported" and rep["models"] >= 1 and rep["model_errors"] == 0
    ok &= p["deviations"] == 0 and p["peak_used_bytes"] <= p["budget_bytes"]
    later = [e for e in p["per_epoch"] if e["epoch"] >= 1]
    for e in p["per_epoch"]:
        print("node %d epoch %d: %d of %d opens ready, %d stalls, %d deviations"
              % (node, e["epoch"], e["ready"], e["opens"], e["stalls"], e["deviations"]))
    ready, opens = sum(e["ready"] for e in later), sum(e["opens"] for e in later)
    print("node %d after the first epoch: %d of %d opens ready" % (node, ready, opens))
    # An iteration's order is known when it starts being read: its first
    # opens race the fetches (0-2 stalls an epoch seen on Keras 3).
    ok &= len(later) == epochs - 1 and opens > 0 and opens - ready <= 2 * len(later)
    ok &= all(e["deviations"] == 0 for e in later)
sys.exit(0 if ok else 1)
PY
}

# PART=N puts 1/N of the dataset in RAM (default 3); PER_CLASS=N makes 4
# classes of N images (default 300); STEP_MS=N adds N ms to each step (10).
part=${PART:-3}
SCRIPT=train_dataset.py
run keras2-seeded tf-keras2 1 "$part" --seed 42 --deterministic
run keras2-numpy-seed tf-keras2 1 "$part" --seed 42 --deterministic --dataset-seed none
run keras3-unseeded tf-current 0 "$part" --dataset-seed none
SCRIPT=train_files.py
run files-keras3-seeded tf-current 1 "$part" --seed 42 --deterministic
run files-keras2-global tf-keras2 1 "$part" --seed 42 --deterministic --files-seed none
run files-keras3-unseeded tf-current 0 "$part" --files-seed none

echo "$failures failures"
[[ $failures -eq 0 ]]
