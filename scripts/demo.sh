#!/usr/bin/env bash
# The main job, end to end on this one machine:
#   1. install what is missing and build (scripts/setup.sh)
#   2. make a small ImageFolder dataset of real JPEGs
#   3. pack it into partitions, show and verify them
#   4. start 4 clairfsd ranks with mpiexec, as 4 "nodes" (own mount, own local dir)
#   5. train an unmodified PyTorch script with 2 ranks through the mounts,
#      then the same script on the source tree
#   6. print epoch times, where reads were served from, and whether the runs agree
#
# usage: scripts/demo.sh [--framework pytorch|keras]
# --framework keras trains the Horovod + Keras tutorial's pattern B instead
# (scripts/keras/train_dataset.py: image_dataset_from_directory sharded after
# loading) with Horovod 0.28.1 and tf.keras 2.15 (the tf-keras2 venv).
# Environment: DEMO_DIR (default: a new temporary directory, removed at the end
# unless KEEP=1), DEMO_IMAGES_PER_CLASS (default 128), DEMO_EPOCHS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
framework=pytorch
while (($#)); do
  case $1 in
    --framework) framework=${2:-}; shift 2 || { echo "demo: --framework needs pytorch or keras" >&2; exit 2; } ;;
    --framework=*) framework=${1#*=}; shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument '$1' (scripts/demo.sh [--framework pytorch|keras])" >&2; exit 2 ;;
  esac
done
[[ $framework == pytorch || $framework == keras ]] \
  || { echo "demo: --framework takes pytorch or keras, not '$framework'" >&2; exit 2; }

scripts/setup.sh
BIN=$repo/${BUILD_DIR:-build}/bin
PY=/usr/bin/python3
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec)

work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/clairfs-demo.XXXXXX")}
mkdir -p "$work"
ranks=4
launcher=""
cleanup() {
  if [[ -n $launcher ]]; then
    kill -TERM "$launcher" 2>/dev/null || true
    wait "$launcher" 2>/dev/null || true
  fi
  for ((r = 0; r < ranks; r++)); do
    mountpoint -q "$work/mnt$r" 2>/dev/null && fusermount3 -u -z "$work/mnt$r" 2>/dev/null
  done
  [[ "${KEEP:-0}" == 1 || -n "${DEMO_DIR:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "demo: interrupted"; exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }
epochs=${DEMO_EPOCHS:-3}

step "1. a synthetic ImageFolder dataset of real JPEGs"
rm -rf "$work/data"
$PY scripts/make_imagefolder.py "$work/data" --classes 8 --per-class "${DEMO_IMAGES_PER_CLASS:-128}"

step "2. partition it (clairfs-partition pack)"
"$BIN/clairfs-partition" pack "$work/data" "$work/packed" --partitions 8 --replicas 2 \
  --compress zstd:3 --force

step "3. what the packs hold (inspect), and every file checked against the source (verify)"
"$BIN/clairfs-partition" inspect "$work/packed" | head -n 6
"$BIN/clairfs-partition" verify "$work/packed" "$work/data"

step "4. four clairfsd ranks (mpiexec -n $ranks), each its own 'node' with a mount and a local dir"
# The prefetcher is told what the training job will do (the same settings the
# script gets below); training rank r runs on "node" r and reads mount r.
if [[ $framework == pytorch ]]; then
  cat >"$work/clairfs.yaml" <<YAML
ram_cache: 256M
prefetch_sampler: torch-distributed
prefetch_root: train
prefetch_seed: 1
prefetch_epochs: $epochs
prefetch_world_size: 2
prefetch_ranks_per_node: 1
prefetch_batch_size: 32
prefetch_workers: 2
YAML
else
  # image_dataset_from_directory(batch_size=1, seed=42) after
  # keras.utils.set_random_seed(42) (the script's --deterministic), tf.keras
  # 2.15; both ranks open every file: each node's reader follows the one order.
  cat >"$work/clairfs.yaml" <<YAML
ram_cache: 256M
prefetch_sampler: keras
prefetch_root: train
prefetch_seed: 42
prefetch_global_seed: 42
prefetch_keras_version: "2.15"
prefetch_batch_size: 1
prefetch_epochs: $epochs
prefetch_world_size: 2
prefetch_ranks_per_node: 1
YAML
fi
cat "$work/clairfs.yaml"
rm -rf "$work"/ssd*
"$MPIEXEC" -n $ranks "$BIN/clairfsd" --config "$work/clairfs.yaml" --dataset "$work/packed" \
  --mount "$work/mnt{rank}" --local-dir "$work/ssd{rank}" >"$work/clairfsd.log" 2>&1 &
launcher=$!
if ! "$BIN/clairfs-wait" "$work"/mnt{0,1,2,3} --timeout 60; then
  echo "demo: the daemons did not come up; their log:"; cat "$work/clairfsd.log"; exit 1
fi
diff -r "$work/data" "$work/mnt3" && echo "mount of rank 3 is identical to the source (diff -r)"

step "5. the same training script ($framework), 2 ranks: through the mounts (rank r reads mnt r), then on the source"
train() {  # train NAME DATA_PATTERN
  if [[ $framework == pytorch ]]; then
    scripts/run_ranks.sh 2 $PY scripts/train.py --data "$2" --epochs "$epochs" --workers 2 \
      --batch-size 32 --seed 1 --report "$work/$1.json" --sample-log "$work/$1.samples"
  else
    # Horovod's ranks from mpiexec; rank r's data directory is DATA_PATTERN with {rank} = r.
    local hvd_py=${CLAIRFS_VENVS:-$repo/.venvs}/tf-keras2/bin/python
    local args=(--epochs "$epochs" --batch-size 32 --seed 42 --deterministic
                --report "$work/$1.json" --sample-log "$work/$1.samples")
    TF_CPP_MIN_LOG_LEVEL=2 "$MPIEXEC" -n 1 "$hvd_py" scripts/keras/train_dataset.py "${2//\{rank\}/0}" "${args[@]}" \
      : -n 1 "$hvd_py" scripts/keras/train_dataset.py "${2//\{rank\}/1}" "${args[@]}"
  fi
}
echo "-- through clairfs"
train clairfs "$work/mnt{rank}/train"
echo "-- directly on the source tree"
train direct "$work/data/train"

step "6. results"
for r in 0 1 2 3; do cp "$work/mnt$r/.clairfs/stats.json" "$work/stats$r.json"; done
$PY - "$work" "$ranks" <<'PY'
import glob, json, sys
work, ranks = sys.argv[1], int(sys.argv[2])
a = json.load(open(work + "/clairfs.json"))
b = json.load(open(work + "/direct.json"))
print("%-6s %14s %14s %8s %12s %12s" % ("epoch", "clairfs (s)", "direct (s)", "ratio", "loss clairfs", "loss direct"))
for x, y in zip(a["epochs"], b["epochs"]):
    print("%-6d %14.2f %14.2f %7.2fx %12.4f %12.4f" % (x["epoch"], x["seconds"], y["seconds"],
          y["seconds"] / x["seconds"], x["loss"], y["loss"]))
same_loss = all(abs(x["loss"] - y["loss"]) < 1e-6 for x, y in zip(a["epochs"], b["epochs"]))
def samples(name):
    # Each rank's log: one line per sample, "... hash" (the fields before the
    # hash say which sample: epoch and index, or a running number).
    out = {}
    for f in glob.glob("%s/%s.samples.rank*" % (work, name)):
        rank = f.rsplit(".rank", 1)[1]
        for line in open(f):
            *key, h = line.split()
            out[(rank, *key)] = h
    return out
sa, sb = samples("clairfs"), samples("direct")
same_bytes = sa == sb
print()
print("samples read through clairfs: %d; identical to the source: %s" % (len(sa), "yes" if same_bytes else "NO"))
print("loss curves match: %s" % ("yes" if same_loss else "NO"))
print()
print("%-6s %10s %12s %10s %12s %12s %12s %10s" % ("rank", "ram cache", "local pack", "fetched",
      "from peers", "to peers", "fallback", "staged"))
for r in range(ranks):
    s = json.load(open("%s/stats%d.json" % (work, r)))
    c = s["cluster"]
    st = c.get("staging", {})
    print("%-6d %10d %12d %10d %12d %12d %12d %7d/%d" % (r, s["served"]["ram_cache"]["reads"],
          s["served"]["local_pack"]["reads"], s.get("prefetch", {}).get("fetched", 0),
          c["peers"]["reads"], c["served_to_peers"]["reads"], c["fallback"]["reads"],
          st.get("packs_done", 0), st.get("packs_total", 0)))
prefetch = []
for r in range(ranks):
    p = json.load(open("%s/stats%d.json" % (work, r))).get("prefetch")
    if p and p.get("enabled"):
        prefetch.append((r, p))
    elif p:
        print("rank %d prefetcher: no training rank on this node, reactive cache only" % r)
for r, p in prefetch:
    pc = p["page_cache"]
    reads = json.load(open("%s/stats%d.json" % (work, r)))["requests"]["read"]
    print("rank %d prefetcher: %d opens, %d found their file ready (%.1f%%), %d stalls, "
          "%d deviations; %d files pushed into the page cache (%d when fetched, %d after the "
          "job listed their directory, %d at their open); %d READ requests reached the daemon"
          % (r, p["opens"], p["ready"], 100.0 * p["ready"] / max(1, p["opens"]), p["stalls"],
             p["deviations"], pc["pushes"] + pc["listed_pushes"] + pc["late_pushes"],
             pc["pushes"], pc["listed_pushes"], pc["late_pushes"], reads))
print("(ram cache / local pack: READ requests each daemon answered from RAM or with blocks decoded "
      "from packs; fetched: whole files the prefetcher loaded ahead of the job, not READs; "
      "from/to peers: pack reads over MPI; fallback: reads of the dataset directory)")
print()
print("The source here is a local disk whose files are already in the page cache, so the direct")
print("run is the fastest case there is: the demo shows that clairfs is exact and how it works.")
print("docs/benchmarks.md compares against a throttled stand-in for a shared file system.")
sys.exit(0 if same_bytes and same_loss else 1)
PY
echo
echo "demo: done (data, packs and logs in $work$([[ ${KEEP:-0} == 1 || -n ${DEMO_DIR:-} ]] || echo ', removed now'))"
