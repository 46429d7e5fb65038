#!/usr/bin/env bash
# The end-to-end row: the unmodified training script (scripts/train.py, 2 ranks,
# DistributedSampler, 2 DataLoader workers each) with its dataset on a
# throttled stand-in for a shared file system (scripts/bench/throttle.sh), in
# three ways, caches dropped before each, the three runs repeated --rounds times
# (each epoch's time is the median over the rounds; the machine is noisy):
#   direct   reading the JPEG tree on the stand-in
#   clairfs  through 2 clairfsd ranks whose packs are on the stand-in (staged to
#            local disk in the background), prefetcher told the job's settings;
#            with --reported told nothing: the job's order reporter (clairfs-run's
#            PYTHONPATH) tells it, and ram_cache is a third of the dataset
#   no I/O   every file read into memory before the clock starts (--preload)
# --other-bin DIR adds a fourth run per round, clairfs with DIR/clairfsd (another
# build), alternating with this build's (first in odd rounds, second in even
# ones), and a line per round comparing their first epochs and staging.
# --size PX: the images' side (make_imagefolder.py; 96 by default).
# Writes a markdown table to stdout and a JSON with every epoch (--json FILE).
#
# usage: [CLAIRFSD_ARGS="OPTIONS"] scripts/bench/train.sh [--per-class N] [--epochs E] [--mbps M] [--iops I] [--rounds R]
#                               [--json FILE] [--reported] [--size PX] [--other-bin DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
PY=/usr/bin/python3
per_class=256 epochs=3 mbps=50 iops=500 rounds=1 json="" reported="" size=96 other=""
while (($#)); do
  case $1 in
    --per-class) per_class=$2; shift 2 ;; --epochs) epochs=$2; shift 2 ;;
    --mbps) mbps=$2; shift 2 ;; --iops) iops=$2; shift 2 ;; --json) json=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;; --reported) reported=1; shift ;;
    --size) size=$2; shift 2 ;; --other-bin) other=$2; shift 2 ;;
    *) echo "usage: $0 [--per-class N] [--epochs E] [--mbps M] [--iops I] [--rounds R] [--json FILE] [--reported] [--size PX] [--other-bin DIR]" >&2
       exit 2 ;;
  esac
done
[[ -z $other || -x $other/clairfsd ]] || { echo "train.sh: no clairfsd in $other" >&2; exit 2; }
source "$repo/scripts/bench/throttle.sh"
bench_workspace train 4 "$mbps" "$iops"

$PY "$repo/scripts/make_imagefolder.py" "$PFS_MNT/data" --classes 8 --per-class "$per_class" --size "$size" >&2
"$BIN/clairfs-partition" pack "$PFS_MNT/data" "$PFS_MNT/packed" --partitions 8 >/dev/null
nfiles=$((8 * per_class))
pfs_enter

train() {  # train NAME DATA [extra args]
  local name=$1 data=$2; shift 2
  "${launch[@]}" "$repo/scripts/run_ranks.sh" 2 $PY "$repo/scripts/train.py" --data "$data" --epochs "$epochs" \
    --workers 2 --batch-size 32 --seed 1 --report "$W/$name.json" "$@" >&2
}
cat >"$W/clairfs.yaml" <<YAML
prefetch_sampler: torch-distributed
prefetch_root: train
prefetch_seed: 1
prefetch_epochs: $epochs
prefetch_world_size: 2
prefetch_ranks_per_node: 1
prefetch_batch_size: 32
prefetch_workers: 2
ram_cache: 512M
YAML
reporter=()
if [[ -n $reported ]]; then
  # No settings at all; RAM for a third of the dataset.
  bytes=$(find "$PFS_MNT/data/train" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  echo "ram_cache: $((bytes / 3))" >"$W/clairfs.yaml"
  reporter=(env "PYTHONPATH=$BIN/report")
fi
for ((round = 1; round <= rounds; round++)); do
  echo "train.sh: round $round of $rounds" >&2
  launch=()
  drop_caches; train "noio.$round" "$PFS_MNT/data/train" --preload
  drop_caches; train "direct.$round" "$PFS_MNT/data/train"
  ways=(clairfs)
  if [[ -n $other ]]; then ways=(clairfs other); ((round % 2)) || ways=(other clairfs); fi
  for way in "${ways[@]}"; do
    drop_caches
    rm -rf "$W/ssd0" "$W/ssd1"  # every run stages from the stand-in again
    daemon=$BIN/clairfsd
    [[ $way == other ]] && daemon=$other/clairfsd
    # shellcheck disable=SC2086  # CLAIRFSD_ARGS: more options, split at spaces
    "$MPIEXEC" -n 2 "$daemon" --config "$W/clairfs.yaml" --dataset "$PFS_MNT/packed" \
      --mount "$W/mnt{rank}" --local-dir "$W/ssd{rank}" ${CLAIRFSD_ARGS:-} >"$W/log" 2>&1 &
    launcher=$!
    "$BIN/clairfs-wait" "$W/mnt0" "$W/mnt1" --quiet --timeout 120 || { cat "$W/log"; exit 1; }
    launch=("${reporter[@]}")
    train "$way.$round" "$W/mnt{rank}/train"
    for r in 0 1; do
      cp "$W/mnt$r/.clairfs/stats.json" "$W/stats$r.json"
      cp "$W/mnt$r/.clairfs/stats.json" "$W/$way.$round.stats$r.json"
    done
    stop_ranks
  done
done

$PY - "$W" "$nfiles" "$PFS_DESC" "${json:-}" "$rounds" "$other" <<'PY'
import json, statistics, sys
w, n, desc, out, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
other = sys.argv[6]
keys = ("noio", "direct", "clairfs") + (("other",) if other else ())
by_round = {k: [json.load(open("%s/%s.%d.json" % (w, k, r)))["epochs"] for r in range(1, rounds + 1)]
            for k in keys}
# Each epoch's time: the median over the rounds.
runs = {k: [{"epoch": e, "seconds": statistics.median(rr[e]["seconds"] for rr in by_round[k])}
            for e in range(len(by_round[k][0]))] for k in keys}
stats = [json.load(open("%s/stats%d.json" % (w, r))) for r in (0, 1)]
p = stats[0].get("prefetch", {})
reads = sum(s["requests"]["read"] for s in stats)  # READs that missed the page cache
p_ = stats[0].get("prefetch", {})
print("Setting: scripts/train.py, 2 ranks x 2 DataLoader workers, batch 32, %d JPEG files "
      "(%s); caches dropped before each run; %d round(s) of the three runs, each epoch the "
      "median over the rounds; clairfs prefetcher: %s." % (
          n, desc, rounds, "the job's reported orders, ram_cache a third of the dataset"
          if p_.get("sampler") == "reported" else "the job's settings, given"))
print()
print("| epoch | no I/O (s) | direct (s) | clairfs (s) | clairfs / no I/O | direct / clairfs |")
print("| --- | --- | --- | --- | --- | --- |")
for e in range(len(runs["noio"])):
    a, b, c = (runs[k][e]["seconds"] for k in ("noio", "direct", "clairfs"))
    print("| %d | %.2f | %.2f | %.2f | %.2fx | %.2fx |" % (e, a, b, c, c / a, b / c))
later = range(1, len(runs["noio"]))
if later:
    noio = sum(runs["noio"][e]["seconds"] for e in later)
    cf = sum(runs["clairfs"][e]["seconds"] for e in later)
    print()
    per_round = ["%.3f" % (sum(by_round["clairfs"][r][e]["seconds"] for e in later) /
                           sum(by_round["noio"][r][e]["seconds"] for e in later))
                 for r in range(rounds)]
    print("Epochs 1-%d together: clairfs / no I/O = %.3fx (medians); by round: %s."
          % (len(runs["noio"]) - 1, cf / noio, ", ".join(per_round)))
if p:
    print()
    print("Prefetcher on rank 0 (last round): %d of %d opens found their file ready (%d in the page cache), "
          "%d stalls. READ requests that reached the daemons (page cache misses): %d, for %d "
          "samples read." % (p.get("ready", 0), p.get("opens", 0),
                             p.get("open_hits", {}).get("page_cache", 0), p.get("stalls", 0),
                             reads, n * len(runs["noio"])))
src = [s.get("cluster", {}).get("source") for s in stats]
if all(src):
    mib = lambda k: sum(x[k] for x in src) / 1048576.0
    print()
    print("Read from the stand-in by the daemons (last round, both ranks): %.1f MiB by staging, "
          "%.1f MiB by other reads, %.1f MiB of it read twice by one rank; the packs: %.1f MiB."
          % (mib("staged_bytes"), mib("direct_bytes"), mib("reread_bytes"),
             src[0]["dataset_bytes"] / 1048576.0))
if other:
    print()
    print("This build's clairfsd against %s/clairfsd, each run on its own (odd rounds this build "
          "first): epoch 0 (s), and per node the files whose first read staging knew "
          "(first_use_files), the ranges it planned (first_use_units) and the MiB it copied in "
          "that order (bytes_first_use), staging's seconds." % other)
    print()
    print("| round | this build: epoch 0 | staging | other: epoch 0 | staging | this / other |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in range(1, rounds + 1):
        cells = []
        for k in ("clairfs", "other"):
            st = [json.load(open("%s/%s.%d.stats%d.json" % (w, k, r, d)))["cluster"]["staging"]
                  for d in (0, 1)]
            cells.append("%.2f" % by_round[k][r - 1][0]["seconds"])
            cells.append(", ".join("%d files, %d ranges, %.0f MiB, %.1f s" % (
                x.get("first_use_files", 0), x["first_use_units"], x["bytes_first_use"] / 1048576.0,
                x["seconds"]) for x in st))
        ratio = by_round["clairfs"][r - 1][0]["seconds"] / by_round["other"][r - 1][0]["seconds"]
        print("| %d | %s | %.3fx |" % (r, " | ".join(cells), ratio))
if out:
    json.dump({"files": n, "throttle": desc, "rounds": rounds, "runs": runs,
               "by_round": by_round, "prefetch_rank0": p, "daemon_reads": reads},
              open(out, "w"), indent=1)
PY
