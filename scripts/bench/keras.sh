#!/usr/bin/env bash
# The end-to-end rows for a Horovod + Keras job, 2 Horovod ranks (tf-keras2
# venv, mpiexec), its dataset on the throttled stand-in for a shared file
# system (scripts/bench/throttle.sh), one of the tutorials' two patterns:
#   B (default)  scripts/keras/train_dataset.py: image_dataset_from_directory(
#                batch_size=1, seed) sharded after loading, so each rank opens
#                every file
#   A            scripts/keras/train_flow.py: ImageDataGenerator(augmentation)
#                .flow_from_directory(seed) on every rank, fit(steps_per_epoch=
#                len(it) // 2) (the daemons run it in batch mode)
# in three ways, caches dropped before each:
#   local    a warm local copy of the JPEG tree (tmpfs, read once before)
#   direct   reading the JPEG tree on the stand-in
#   clairfs  through 2 clairfsd ranks whose packs are on the stand-in (staged to
#            local disk in the background), told the job's Keras settings; with
#            --reported told nothing: the job's order reporter (clairfs-run's
#            PYTHONPATH) reports them, ram_cache a third of the dataset
# Prints a markdown table (each epoch; clairfs / local, direct / clairfs) and the
# prefetcher's per-epoch share of opens that found their file ready.
#
# --json FILE also writes every epoch in the form scripts/bench/plot.py draws.
# Pattern A as Horovod's Keras ImageNet example runs it: --workers N passes
# fit(workers=N) (tf.keras 2's OrderedEnqueuer), --val adds a validation
# directory of a quarter of the files, validated every epoch with
# validation_steps = 3 x its batches // ranks (scripts/keras/train_flow.py).
#
# usage: scripts/bench/keras.sh [--pattern A|B] [--per-class N] [--epochs E] [--mbps M] [--iops I]
#                               [--json FILE] [--reported] [--workers N] [--val]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
PY=/usr/bin/python3
HVD_PY=${CLAIRFS_VENVS:-$repo/.venvs}/tf-keras2/bin/python
per_class=128 epochs=3 mbps=50 iops=200 pattern=B json="" reported="" workers=1 val=""
usage="usage: $0 [--pattern A|B] [--per-class N] [--epochs E] [--mbps M] [--iops I] [--json FILE] [--reported] [--workers N] [--val]"
while (($#)); do
  case $1 in
    --pattern) pattern=${2^^}; shift 2 ;; --json) json=$2; shift 2 ;;
    --per-class) per_class=$2; shift 2 ;; --epochs) epochs=$2; shift 2 ;;
    --mbps) mbps=$2; shift 2 ;; --iops) iops=$2; shift 2 ;;
    --reported) reported=1; shift ;;
    --workers) workers=$2; shift 2 ;; --val) val=1; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ $pattern == A || $pattern == B ]] || { echo "keras.sh: --pattern takes A or B" >&2; exit 2; }
[[ $workers =~ ^[1-9][0-9]*$ ]] || { echo "keras.sh: --workers takes a count >= 1" >&2; exit 2; }
if [[ $workers -gt 1 || -n $val ]] && [[ $pattern != A || -z $reported ]]; then
  echo "keras.sh: --workers and --val are pattern A's, with --reported (no sampler models them)" >&2
  exit 2
fi
[[ -x $HVD_PY ]] || { echo "keras.sh: no $HVD_PY (scripts/setup.sh creates it)" >&2; exit 1; }
source "$repo/scripts/bench/throttle.sh"
bench_workspace keras 4 "$mbps" "$iops"

$PY "$repo/scripts/make_imagefolder.py" "$PFS_MNT/data" --classes 8 --per-class "$per_class" >&2
if [[ -n $val ]]; then
  $PY "$repo/scripts/make_imagefolder.py" "$PFS_MNT/v" --classes 8 --per-class $((per_class / 4)) --seed 9 >&2
  mv "$PFS_MNT/v/train" "$PFS_MNT/data/val"
  rm -rf "$PFS_MNT/v"
fi
"$BIN/clairfs-partition" pack "$PFS_MNT/data" "$PFS_MNT/packed" --partitions 8 >/dev/null
nfiles=$((8 * per_class))
local_copy=$(mktemp -d /dev/shm/clairfs-keras.XXXXXX)
trap 'rm -rf "$local_copy"; bench_cleanup' EXIT
cp -r "$PFS_MNT/data" "$local_copy/"
pfs_enter

# Batch 32 in both; pattern A's augmentation is the script's own.
if [[ $pattern == B ]]; then
  script=$repo/scripts/keras/train_dataset.py
  sampler_settings="prefetch_sampler: keras
prefetch_global_seed: 42
prefetch_batch_size: 1"
else
  script=$repo/scripts/keras/train_flow.py
  len=$(((nfiles + 31) / 32))
  sampler_settings="prefetch_sampler: keras-flow
prefetch_batch_size: 32
prefetch_protocol: fit
prefetch_augment: \"horizontal_flip=1,rotation_range=10,width_shift_range=0.1,zoom_range=0.1\"
prefetch_steps_per_epoch: $((len / 2))"
fi
train() {  # train NAME DATA0 DATA1: Horovod rank r reads DATAr
  local args=(--epochs "$epochs" --batch-size 32 --seed 42 --deterministic --report "$W/$1.json")
  [[ $workers -gt 1 ]] && args+=(--workers "$workers")
  local v0=() v1=()
  [[ -n $val ]] && v0=(--val-data "${2%/train}/val") v1=(--val-data "${3%/train}/val")
  local path=""
  [[ $1 == clairfs && -n $reported ]] && path=$BIN/report  # as clairfs-run puts it
  PYTHONPATH=$path TF_CPP_MIN_LOG_LEVEL=2 "$MPIEXEC" -n 1 "$HVD_PY" "$script" "$2" "${args[@]}" ${v0[@]+"${v0[@]}"} \
    : -n 1 "$HVD_PY" "$script" "$3" "${args[@]}" ${v1[@]+"${v1[@]}"} >&2
}
if [[ -n $reported ]]; then
  bytes=$(find "$PFS_MNT/data" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  echo "ram_cache: $((bytes / 3))" >"$W/clairfs.yaml"
else
  cat >"$W/clairfs.yaml" <<YAML
$sampler_settings
prefetch_root: train
prefetch_seed: 42
prefetch_keras_version: "2.15"
prefetch_epochs: $epochs
prefetch_world_size: 2
ram_cache: 512M
YAML
fi
drop_caches; cat "$local_copy"/data/*/*/* >/dev/null  # the local copy is warm
train local "$local_copy/data/train" "$local_copy/data/train"
drop_caches; train direct "$PFS_MNT/data/train" "$PFS_MNT/data/train"
drop_caches
"$MPIEXEC" -n 2 "$BIN/clairfsd" --config "$W/clairfs.yaml" --dataset "$PFS_MNT/packed" \
  --mount "$W/mnt{rank}" --local-dir "$W/ssd{rank}" >"$W/log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$W/mnt0" "$W/mnt1" --quiet --timeout 120 || { cat "$W/log"; exit 1; }
train clairfs "$W/mnt0/train" "$W/mnt1/train"
cp "$W/mnt0/.clairfs/stats.json" "$W/stats0.json"
cp "$W/mnt1/.clairfs/stats.json" "$W/stats1.json"
stop_ranks

$PY - "$W" "$nfiles" "$PFS_DESC" "$pattern" "$json" "$workers" "$val" <<'PY'
import json, sys
w, n, desc, pattern, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
workers, val = int(sys.argv[6]), sys.argv[7] == "1"
runs = {k: json.load(open("%s/%s.json" % (w, k)))["epochs"] for k in ("local", "direct", "clairfs")}
if pattern == "B":
    what = ("scripts/keras/train_dataset.py (pattern B), Horovod 0.28.1 + tf.keras 2.15, 2 ranks, "
            "batch 32, each rank opening all %d JPEG files every epoch" % n)
else:
    what = ("scripts/keras/train_flow.py (pattern A), Horovod 0.28.1 + tf.keras 2.15, 2 ranks, "
            "batch 32, %d JPEG files, fit(steps_per_epoch=%d): each rank opens half of them "
            "(the same half) every epoch" % (n, (n + 31) // 32 // 2))
    if workers > 1:
        what += ", fit(workers=%d)" % workers
    if val:
        what += (", validating on %d more files every epoch (validation_steps = 3 x its "
                 "batches // 2)" % (n // 4))
how = ("the job's reported orders, ram_cache a third of the dataset"
       if json.load(open("%s/stats0.json" % w))["prefetch"].get("sampler") == "reported"
       else "the job's settings, given, ram_cache 512M")
print("Setting: %s (%s); clairfs: %s; caches dropped before each run; one round." % (what, desc, how))
print()
print("| epoch | local copy (s) | direct (s) | clairfs (s) | clairfs / local | direct / clairfs | ready at open (node 0, node 1) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
ready = []
for node in (0, 1):
    per = {e["epoch"]: e for e in json.load(open("%s/stats%d.json" % (w, node)))["prefetch"]["per_epoch"]}
    ready.append(per)
for e in range(len(runs["local"])):
    a, b, c = (runs[k][e]["seconds"] for k in ("local", "direct", "clairfs"))
    # With validation the prefetcher's epochs are the loaders' segments in turn, not fit's.
    r = "-" if val else ", ".join(
        "%.1f%%" % (100.0 * p[e]["ready"] / max(1, p[e]["opens"])) if e in p else "-"
        for p in ready)
    print("| %d | %.2f | %.2f | %.2f | %.2fx | %.2fx | %s |" % (e, a, b, c, c / a, b / c, r))
if val:
    print()
    print("Opens after the prefetcher's first epoch (fit's first training epoch) found ready: " +
          ", ".join("node %d %d of %d" % (i, sum(x["ready"] for k, x in p.items() if k >= 1),
                                          sum(x["opens"] for k, x in p.items() if k >= 1))
                    for i, p in enumerate(ready)) + ".")
if out:
    json.dump({"files": n, "throttle": desc,
               "title": "Horovod + Keras, pattern %s" % pattern,
               "labels": {"local": "warm local copy (tmpfs)", "direct": "direct (throttled FS)",
                          "clairfs": "clairfs"},
               "runs": runs,
               "ready_per_epoch": [[p[e]["ready"] / max(1, p[e]["opens"]) if e in p else None
                                    for e in range(len(runs["local"]))] for p in ready]},
              open(out, "w"), indent=1)
PY
