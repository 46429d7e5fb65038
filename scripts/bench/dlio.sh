#!/usr/bin/env bash
# DLIO 2.0.0 (the MLPerf Storage engine, PyPI dlio_benchmark) as the training job:
# 2 MPI ranks, PyTorch loader, npz files it generates itself, read in three ways,
# caches dropped before each run, the three repeated --repeats times alternating:
#   local    the dataset on this machine's disk
#   direct   the dataset on the throttled stand-in for a shared file system
#            (scripts/bench/throttle.sh)
#   clairfs  packed on the stand-in, served by 2 clairfsd ranks (one "node" each,
#            mounts $W/mnt0 and $W/mnt1, staging into $W/ssd0, $W/ssd1), the
#            prefetcher told DLIO's read order by an order file
# for two datasets: many small files and a few large ones (unet3d-like). Prints
# per run each epoch's time, DLIO's AU (accelerator utilization) and, for clairfs,
# what the daemons read from the stand-in and how long opens and reads waited.
# --checkpoint MIB turns on DLIO's checkpointing too: after every epoch every rank
# saves a model of MIB MiB (torch.save, file opened "wb"), local: to the local
# disk, direct: to the stand-in, clairfs: to the mounts' writable area (writes_dir
# out, writes_local on the local disk, writes_persist on the stand-in); the table
# gets DLIO's checkpoint times (rank 0's saves) and, for clairfs, how long the
# daemons took to stop (their drain to the stand-in included). --sync mounts the
# stand-in `sync` (every write waits for the throttled device, as in
# scripts/bench/checkpoint.sh --sync).
#
# usage: scripts/bench/dlio.sh [--quick] [--sets small,large] [--repeats R] [--epochs E]
#          [--small-files N] [--small-kib K] [--large-files N] [--large-mib M]
#          [--batch B] [--large-batch B] [--compute S] [--large-compute S] [--threads T]
#          [--mbps M] [--iops I] [--placement balanced|hash|contiguous]
#          [--ways local,direct,clairfs] [--variant NAME=OPTIONS]... [--checkpoint MIB] [--sync]
#        scripts/bench/dlio.sh --setup      (only build the DLIO venv)
# --variant adds a clairfs way NAME (rows "clairfs-NAME") whose daemons get OPTIONS
# too (e.g. --variant noyield="--stage-yield-ms 0"; OPTIONS beginning with bin=DIR run
# DIR/clairfsd instead, e.g. another build's; OPTIONS beginning with placement=P,
# bin=DIR being first if both are given, serve packs of the same dataset made with
# clairfs-partition --placement P, e.g. --variant contig=placement=contiguous), run
# in the same repeats right after the clairfs row; --ways leaves out local or direct.
# Sizes: 8,192 files of 256 KiB and 64 of 32 MiB (about 25 min here); --quick: 512 of
# 256 KiB and 16 of 8 MiB (about 4 min).
# Environment: DLIO_VENV (default .venvs/dlio), RAM_CACHE (the daemons' ram_cache,
# default 1G), CLAIRFSD_ARGS (more daemon options), DLIO_KEEP=DIR (keep the runs'
# outputs and logs there). Exit 77: not root / no blkio.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
VENV=${DLIO_VENV:-$repo/.venvs/dlio}
sets=small,large repeats=3 epochs=3 threads=2 mbps=100 iops=500 placement=balanced setup_only=""
ways=local,direct,clairfs variants=() ckpt_mib=0 sync=0
declare -A files=([small]=8192 [large]=64) bytes=([small]=$((256 << 10)) [large]=$((32 << 20)))
declare -A batch=([small]=4 [large]=2)  # large: 2 so that an epoch has 16 steps, not 8
# Seconds of "training" per step. Large: loading 2 x 32 MiB takes ~0.15 s a step here
# even from the page cache, so with 0.02 s the AU would be ~10% everywhere.
declare -A compute=([small]=0.02 [large]=0.25)
usage() { sed -n '/^# usage:/,/^# Environment/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --quick) files=([small]=512 [large]=16) bytes=([small]=$((256 << 10)) [large]=$((8 << 20))); shift ;;
    --sets) sets=$2; shift 2 ;; --repeats) repeats=$2; shift 2 ;; --epochs) epochs=$2; shift 2 ;;
    --small-files) files[small]=$2; shift 2 ;; --small-kib) bytes[small]=$(($2 << 10)); shift 2 ;;
    --large-files) files[large]=$2; shift 2 ;; --large-mib) bytes[large]=$(($2 << 20)); shift 2 ;;
    --batch) batch[small]=$2; shift 2 ;; --large-batch) batch[large]=$2; shift 2 ;;
    --compute) compute[small]=$2; shift 2 ;; --large-compute) compute[large]=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --mbps) mbps=$2; shift 2 ;; --iops) iops=$2; shift 2 ;; --setup) setup_only=1; shift ;;
    --placement) placement=$2; shift 2 ;;
    --ways) ways=$2; shift 2 ;;
    --variant) [[ $2 == ?*=* ]] || usage; variants+=("$2"); shift 2 ;;
    --checkpoint) [[ $2 =~ ^[1-9][0-9]*$ ]] || usage; ckpt_mib=$2; shift 2 ;;
    --sync) sync=1; shift ;;
    *) usage ;;
  esac
done
say() { echo "dlio.sh: $*" >&2; }
fail() { say "error: $*"; exit 1; }

# --- The DLIO venv --------------------------------------------------------------
# `pip install dlio_benchmark==2.0.0` would pull CUDA torch, torchaudio and NVIDIA
# DALI. Installed --no-deps instead, with only what it imports on our path
# (framework pytorch, npz, the PyTorch loader): hydra/omegaconf for its config,
# pandas and psutil (stats), pydftracer (its Profile decorators fail without it),
# mpi4py, and TensorFlow, which it imports at start (its profiler factory). torch
# is Debian's python3-torch 1.13 through --system-site-packages: pypi.org's Linux
# torch wheels are CUDA builds (plus GBs of nvidia-* wheels) and the CPU builds live
# on download.pytorch.org, not reachable here; DLIO's PyTorch loader uses nothing
# newer than 1.13 has. numpy stays 1.x (1.26.4): Debian's torch is built against
# numpy 1.24 and does not work with numpy 2; tensorflow-cpu 2.21 (the tf-current
# venv's, scripts/python/tf-current.txt) accepts numpy >= 1.26.
PINS=(
  dlio_benchmark==2.0.0 pydftracer==1.0.2
  hydra-core==1.3.2 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 PyYAML==6.0.4 packaging==26.3
  pandas==2.3.3 python-dateutil==2.9.0.post0 pytz==2025.2 tzdata==2025.2 six==1.17.0 psutil==7.2.2
  numpy==1.26.4 tensorflow_cpu==2.21.0 absl-py==2.5.1 astunparse==1.6.3 flatbuffers==25.12.19
  gast==0.7.0 google-pasta==0.2.0 grpcio==1.85.1 ml_dtypes==0.6.0 opt_einsum==3.4.0
  protobuf==7.36.2 termcolor==3.3.0 typing_extensions==4.16.0 wrapt==2.5.2
)
# mpi4py 3.1.6 ships its generated C source (4.x needs Cython, and GCC 12 took 22 GB
# compiling that C here); the address-space limit makes a runaway build fail, not OOM.
MPI4PY=mpi4py==3.1.6
build_venv() {
  local want log=$VENV.install.log
  want=$({ printf '%s\n' "${PINS[@]}" "$MPI4PY"; /usr/bin/python3 --version; } | sha256sum | cut -d' ' -f1)
  if [[ -f $VENV/.clairfs-stamp && $(<"$VENV/.clairfs-stamp") == "$want" ]]; then
    say "venv $VENV is up to date"; return 0
  fi
  local mpicc; mpicc=$(command -v mpicc.mpich) || fail "mpicc.mpich not found: install libmpich-dev (scripts/setup.sh)"
  /usr/bin/python3 -c 'import torch' 2>/dev/null || fail "Debian's python3-torch is missing (scripts/setup.sh installs it)"
  say "creating $VENV (--system-site-packages for Debian's torch 1.13); pip --no-deps, pinned:"
  printf '  %s\n' "${PINS[@]}" >&2
  rm -rf "$VENV"; /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install --no-deps --no-build-isolation --disable-pip-version-check "${PINS[@]}" >"$log" 2>&1 ||
    { tail -n 25 "$log" >&2; fail "pip could not install the pins above (log: $log)"; }
  say "building $MPI4PY from source against MPICH ($mpicc)"
  (ulimit -v $((8 << 20)) && MPICC=$mpicc CFLAGS=-g0 "$VENV/bin/pip" install --no-deps --no-build-isolation \
    --no-binary mpi4py --disable-pip-version-check "$MPI4PY") >>"$log" 2>&1 ||
    { tail -n 25 "$log" >&2; fail "building $MPI4PY failed (log: $log)"; }
  local out
  out=$(cd /tmp && DFTRACER_ENABLE=0 TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c '
import numpy, torch, tensorflow as tf, mpi4py.MPI as M, dlio_benchmark.main
assert numpy.__file__.startswith(__import__("sys").prefix), "numpy is not the venv'"'"'s"
assert "MPICH" in M.Get_library_version(), "mpi4py is not on MPICH"
print("numpy", numpy.__version__, "torch", torch.__version__, "tensorflow", tf.__version__,
      "mpi4py on", M.Get_library_version().splitlines()[0])' 2>&1) || { echo "$out" >&2; fail "the venv does not import DLIO"; }
  say "venv ready: ${out##*$'\n'}"
  echo "$want" >"$VENV/.clairfs-stamp"
}
if [[ -n $setup_only ]]; then build_venv; exit 0; fi

# --- Workspace: the stand-in holds each dataset and its packs -------------------
IFS=, read -r -a setlist <<<"$sets"
total=0
for s in "${setlist[@]}"; do
  [[ -n ${files[$s]:-} ]] || usage
  total=$((total + files[$s] * bytes[$s]))
done
source "$repo/scripts/bench/throttle.sh"
# Checkpoints: 2 ranks x epochs x MIB in each of direct and clairfs's persist.
# The placements the variants name, each one more set of packs on the stand-in.
placements=("$placement")
for v in "${variants[@]}"; do
  o=${v#*=}; [[ $o == bin=* ]] && { o=${o#bin=*[[:space:]]}; [[ $o == bin=* ]] && o=""; }
  if [[ $o == placement=* ]]; then
    p=${o#placement=}; p=${p%%[[:space:]]*}
    [[ " ${placements[*]} " == *" $p "* ]] || placements+=("$p")
  fi
done
bench_workspace dlio $(((total * (13 + 10 * ${#placements[@]}) / 10 + 4 * epochs * (ckpt_mib << 20)) / (1 << 30) + 2)) "$mbps" "$iops"  # exits 77 when not root / no blkio
if ((ckpt_mib)); then
  pfs_throttle_writes
  if ((sync)); then mount -o remount,sync "$PFS_MNT"; PFS_DESC+=", mounted sync"; fi
fi
# DLIO_KEEP=DIR: keep every run's outputs and logs (the workspace goes on exit).
trap '[[ -z ${DLIO_KEEP:-} ]] || cp -r "$W/out" "$DLIO_KEEP" 2>/dev/null; bench_cleanup' EXIT
build_venv
mkdir -p "$W/conf/workload" "$W/out" "$W/local"
pf=$(((2 + threads - 1) / threads))  # DLIO: prefetch_factor = ceil(prefetch_size 2 / read_threads)

# A workload config per dataset; data_folder comes from the environment, DLIO_DATA,
# which mpiexec sets per rank (dlio_run): each rank reads its own node's mount.
write_workload() {  # write_workload SET
  cat >"$W/conf/workload/clairfs_$1.yaml" <<YAML
model: clairfs_$1
framework: pytorch
workflow: {generate_data: False, train: True, checkpoint: $( ((ckpt_mib)) && echo True || echo False), evaluation: False}
dataset:
  data_folder: \${oc.env:DLIO_DATA}
  format: npz
  num_files_train: ${files[$1]}
  num_files_eval: 0
  num_samples_per_file: 1
  record_length: ${bytes[$1]}
  record_length_stdev: 0
  keep_files: True
reader:
  data_loader: pytorch
  batch_size: ${batch[$1]}
  read_threads: $threads
  prefetch_size: 2
  file_shuffle: off
  sample_shuffle: seed
train: {epochs: $epochs, computation_time: ${compute[$1]}, seed: 123}
checkpoint:
  checkpoint_folder: \${oc.env:DLIO_CKPT}
  type: all_ranks
  checkpoint_after_epoch: 1
  epochs_between_checkpoints: 1
  model_size: $((ckpt_mib << 20))
  layer_parameters: []
YAML
}
# Bytes and IOs read from the stand-in so far: the throttle's own counters.
pfs_read() {
  local dev; dev=$(lsblk -dno MAJ:MIN "$PFS_LOOP" | tr -d ' ')
  awk -v d="$dev" '$1 == d && $2 == "Read" {printf "%s ", $3}' \
    "$PFS_CGROUP/blkio.throttle.io_service_bytes" "$PFS_CGROUP/blkio.throttle.io_serviced"
}
# dlio_run NAME SET DATA0 DATA1 [OVERRIDES]: DLIO with 2 ranks, rank r reading DATAr
# and saving its checkpoints (if any) in CKPTr (default: the run's output folder).
dlio_run() {
  local name=$1 set=$2 d0=$3 d1=$4 out=$W/out/$1; shift 4
  local c0=${CKPT0:-$out/checkpoints} c1=${CKPT1:-$out/checkpoints}
  mkdir -p "$out"; date +%s.%N >"$out/launched"
  [[ -f $out/pfs_before ]] || pfs_read >"$out/pfs_before"
  local cmd=("$VENV/bin/dlio_benchmark" --config-dir "$W/conf" "workload=clairfs_$set"
    "hydra.run.dir=$out" "++workload.output.folder=$out" "$@")
  # DFTRACER_ENABLE=0: DLIO's own tracer (on by default) would hook every call.
  (cd "$out" && DFTRACER_ENABLE=0 CUDA_VISIBLE_DEVICES="" "$MPIEXEC" -n 1 -env DLIO_DATA "$d0" -env DLIO_CKPT "$c0" \
    "${cmd[@]}" : -n 1 -env DLIO_DATA "$d1" -env DLIO_CKPT "$c1" "${cmd[@]}") >"$out/dlio.out" 2>&1 ||
    { grep -v ' step .* processed ' "$out/dlio.out" | tail -n 30 >&2; fail "DLIO run $name failed ($out)"; }
  pfs_read >"$out/pfs_after"
}
# The order each rank opens its files in, from DLIO's own sampler class: every
# epoch rank r takes the contiguous r-th half of the sorted file list (index
# sampler), shuffled with np.random.seed(seed) at each epoch's start, in place,
# so each epoch differs; DataLoader(drop_last=True) reads whole batches only.
write_order() {  # write_order SET > ORDER FILE (paths relative to the dataset root)
  (cd /tmp && DFTRACER_ENABLE=0 "$VENV/bin/python" - "$W/local/$1/train" "$epochs" "${batch[$1]}" <<'PY'
import os, sys
from dlio_benchmark.common.enumerations import Shuffle
from dlio_benchmark.data_loader.torch_data_loader import dlio_sampler
root, epochs, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = sorted(f for f in os.listdir(root) if f.endswith("npz"))  # DLIO sorts the paths
print("# clairfs-order v1\n# entries paths\n# world-size 2")
for rank in range(2):
    sampler = dlio_sampler(rank, 2, len(names), Shuffle.SEED, epochs, 123)
    for epoch in range(epochs):
        idx = list(sampler)
        print("# epoch %d rank %d" % (epoch, rank))
        print("\n".join("train/" + names[i] for i in idx[:len(idx) // batch * batch]))
PY
  )
}
daemon_config() {  # daemon_config SET: the prefetcher told DLIO's loader and order
  cat <<YAML
prefetch_sampler: order-file
prefetch_order_file: $W/order-$1.txt
prefetch_epochs: $epochs
prefetch_world_size: 2
prefetch_ranks_per_node: 1
prefetch_batch_size: ${batch[$1]}
prefetch_workers: $threads
prefetch_factor: $pf
ram_cache: ${RAM_CACHE:-1G}
YAML
}

# --- Datasets: DLIO's generator on local disk, a copy and the packs on the stand-in
for s in "${setlist[@]}"; do
  write_workload "$s"
  say "$s: DLIO generates ${files[$s]} npz files of $((bytes[$s] >> 10)) KiB"
  dlio_run "gen-$s" "$s" "$W/local/$s" "$W/local/$s" \
    ++workload.workflow.generate_data=True ++workload.workflow.train=False
  cp -r "$W/local/$s" "$PFS_MNT/$s"
  # --placement contiguous: partitions are runs of the sorted list, as DLIO's halves are.
  # Packs of another placement than --placement's (a variant's) are $s-P.clairfs.
  for p in "${placements[@]}"; do
    pack=$PFS_MNT/$s.clairfs; [[ $p == "$placement" ]] || pack=$PFS_MNT/$s-$p.clairfs
    "$BIN/clairfs-partition" pack "$PFS_MNT/$s" "$pack" --partitions 8 --placement "$p" >/dev/null ||
      fail "clairfs-partition --placement $p failed"
  done
  write_order "$s" >"$W/order-$s.txt"
  daemon_config "$s" >"$W/clairfs-$s.yaml"
  du -sb "$W/local/$s" | cut -f1 >"$W/bytes-$s"
done
sync
pfs_enter  # from here on every read of the stand-in is throttled

# run_clairfs NAME SET [bin=DIR] [placement=P] [OPTION...]: OPTIONs go to clairfsd
# (DIR's), serving the packs made with placement P (default --placement's).
run_clairfs() {
  local name=$1 set=$2 out=$W/out/$1 daemon=$BIN/clairfsd pack=$PFS_MNT/$2.clairfs
  shift 2
  if [[ ${1:-} == bin=* ]]; then daemon=${1#bin=}/clairfsd; shift; fi
  if [[ ${1:-} == placement=* ]]; then
    [[ ${1#placement=} == "$placement" ]] || pack=$PFS_MNT/$set-${1#placement=}.clairfs
    shift
  fi
  [[ -x $daemon ]] || fail "no clairfsd at $daemon"
  rm -rf "$W/ssd0" "$W/ssd1"; mkdir -p "$out"  # every run stages from the stand-in again
  drop_caches
  date +%s.%N >"$out/daemons_started"; pfs_read >"$out/pfs_before"
  local writes=()
  ((ckpt_mib)) && writes=(--writes-dir out --writes-local "$W/wl-$name-{rank}" --writes-persist "$PFS_MNT/persist-$name")
  # shellcheck disable=SC2086  # CLAIRFSD_ARGS: more options, split at spaces
  "$MPIEXEC" -n 2 "$daemon" --config "$W/clairfs-$set.yaml" --dataset "$pack" \
    --mount "$W/mnt{rank}" --local-dir "$W/ssd{rank}" "${writes[@]}" ${CLAIRFSD_ARGS:-} "$@" >"$out/daemons.log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$W/mnt0" "$W/mnt1" --quiet --timeout 120 || { tail -n 20 "$out/daemons.log" >&2; exit 1; }
  if ((ckpt_mib)); then
    CKPT0=$W/mnt0/out/$name CKPT1=$W/mnt1/out/$name dlio_run "$name" "$set" "$W/mnt0" "$W/mnt1"
  else  # DLIO makes its checkpoint folder even when it saves nothing: not in the read-only mount
    dlio_run "$name" "$set" "$W/mnt0" "$W/mnt1"
  fi
  cp "$W/mnt0/.clairfs/stats.json" "$out/stats0.json"
  cp "$W/mnt1/.clairfs/stats.json" "$out/stats1.json"
  local t0; t0=$(date +%s.%N)
  stop_ranks  # each daemon drains its writable area first
  awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN {printf "%.2f\n", t1 - t0}' >"$out/stop_seconds"
  pfs_read >"$out/pfs_after"
  rm -rf "$PFS_MNT/persist-$name" "$W"/wl-"$name"-*
}
for s in "${setlist[@]}"; do
  for ((r = 1; r <= repeats; r++)); do
    say "$s: repeat $r of $repeats: ${ways//,/, }${variants:+ and ${#variants[@]} variant(s)}"
    if [[ ,$ways, == *,local,* ]]; then
      drop_caches
      CKPT0=$W/ckpt-$s.$r CKPT1=$W/ckpt-$s.$r dlio_run "$s.local.$r" "$s" "$W/local/$s" "$W/local/$s"
      rm -rf "$W/ckpt-$s.$r"
    fi
    if [[ ,$ways, == *,direct,* ]]; then
      drop_caches
      CKPT0=$PFS_MNT/ckpt-$s.$r CKPT1=$PFS_MNT/ckpt-$s.$r dlio_run "$s.direct.$r" "$s" "$PFS_MNT/$s" "$PFS_MNT/$s"
      rm -rf "$PFS_MNT/ckpt-$s.$r"
    fi
    [[ ,$ways, == *,clairfs,* ]] && run_clairfs "$s.clairfs.$r" "$s"
    for v in "${variants[@]}"; do
      # shellcheck disable=SC2086  # the variant's options, split at spaces
      run_clairfs "$s.clairfs-${v%%=*}.$r" "$s" ${v#*=}
    done
  done
done

# --- Report ---------------------------------------------------------------------
echo
echo "DLIO 2.0.0, 2 ranks (mpiexec), PyTorch loader, read_threads $threads, $epochs epochs, sample_shuffle" \
  "seed; packs: 8 partitions, placement $placement; stand-in: $PFS_DESC, read-ahead $(cat "/sys/block/${PFS_LOOP#/dev/}/queue/read_ahead_kb") KiB;" \
  "caches dropped before each run."
names=()
for c in ${ways//,/ }; do names+=("$c"); done
for v in "${variants[@]}"; do names+=("clairfs-${v%%=*}"); done
((ckpt_mib)) && echo "Checkpoints: every rank saves $ckpt_mib MiB after every epoch (DLIO's PyTorch checkpointing, torch.save)."
WAYS="${names[*]}" CKPT=$ckpt_mib /usr/bin/python3 - "$W" "$repeats" "$mbps" "${setlist[@]}" <<'PY'
import datetime, json, os, sys
w, repeats, mbps, sets = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
ways = os.environ["WAYS"].split()
ckpt = int(os.environ["CKPT"]) > 0
load = lambda p: json.load(open(p))
def cpu_of(node, stats):
    """'node N T s (name t, ...)': a daemon's CPU seconds, its busiest threads first."""
    cpu = stats.get("cpu")
    if cpu is None:
        return "node %d -" % node
    threads = sorted(cpu["threads"], key=lambda t: -(t["user_s"] + t["system_s"]))
    return "node %d %.1f s (%s)" % (node, cpu["user_s"] + cpu["system_s"], ", ".join(
        "%s %.1f" % (t["name"], t["user_s"] + t["system_s"]) for t in threads[:5]))
for s in sets:
    size = int(open("%s/bytes-%s" % (w, s)).read())
    wl = open("%s/conf/workload/clairfs_%s.yaml" % (w, s)).read()
    val = lambda key: wl.split(key + ": ")[1].split()[0].rstrip(",}")
    print("\n%s: %s files, %.1f MiB, batch %s, computation_time %s s a step; physical limit "
          "(bytes / %g MB/s): %.1f s to read it from the stand-in\n" % (s, val("num_files_train"),
          size / 2**20, val("batch_size"), val("computation_time"), mbps, size / (mbps * 1e6)))
    print("| run | start to epoch 1 (s) | epoch times (s) | AU per epoch (%) | read from the stand-in "
          "(MiB, IOs) | by the daemons: staged + other of the packs (MiB), staging time (paused for reads) | "
          "prefetch.stall_ns, node 0 + 1 (s) |" + (" checkpoint saves, rank 0 (s) | daemons' stop, "
          "drain included (s) |" if ckpt else ""))
    print("| --- " * (9 if ckpt else 7) + "|")
    first, upto, saves, cpu_lines, place_lines = {}, {}, {}, [], []
    for r in range(1, repeats + 1):
        for c in ways:
            o = "%s/out/%s.%s.%d" % (w, s, c, r)
            ep = load(o + "/per_epoch_stats.json")
            times = " / ".join(ep[k]["duration"] for k in sorted(ep, key=int))
            au = " / ".join("%.1f" % a for a in load(o + "/summary.json")["metric"]["train_au_percentage"])
            src = stall = "-"
            # From DLIO's launch, or for clairfs from the daemons' (they stage meanwhile).
            t0 = o + ("/daemons_started" if c.startswith("clairfs") else "/launched")
            start = datetime.datetime.strptime(ep["1"]["start"], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            head = "%.1f" % (start - float(open(t0).read()))
            b0, i0 = map(int, open(o + "/pfs_before").read().split())
            b1, i1 = map(int, open(o + "/pfs_after").read().split())
            pfs = "%.0f, %d" % ((b1 - b0) / 2**20, i1 - i0)
            if c.startswith("clairfs"):
                st = [load("%s/stats%d.json" % (o, i)) for i in (0, 1)]
                cs = [x["cluster"]["source"] for x in st]
                sg = [x["cluster"]["staging"] for x in st]
                src = "%.0f + %.0f of %.0f, %.1f s (paused %.1f s)" % (
                    sum(x["staged_bytes"] for x in cs) / 2**20, sum(x["direct_bytes"] for x in cs) / 2**20,
                    cs[0]["dataset_bytes"] / 2**20, max(x["seconds"] for x in sg),
                    sum(x.get("yield_seconds", 0) for x in sg))
                stall = " + ".join("%.2f" % (x.get("prefetch", {}).get("stall_ns", 0) / 1e9) for x in st)
                cpu_lines.append("%s %d: %s" % (c, r, "; ".join(cpu_of(i, x) for i, x in enumerate(st))))
                pl = st[0]["cluster"].get("placement", {})
                place_lines.append("%s %d: by reader %s, %d partitions moved, first epoch's reads of "
                                   "peers' packs %.0f MiB (%.0f MiB as packed)" % (
                                       c, r, "yes" if pl.get("by_reader") else "no", pl.get("moved", 0),
                                       pl.get("first_epoch_peer_bytes", 0) / 2**20,
                                       pl.get("default_first_epoch_peer_bytes", 0) / 2**20))
            row = "| %s %d | %s | %s | %s | %s | %s | %s |" % (c, r, head, times, au, pfs, src, stall)
            if ckpt:
                took = [float(ep[k][b]["duration"]) for k in sorted(ep, key=int) for b in ep[k]
                        if b.startswith("ckpt") and "duration" in ep[k][b]]
                saves.setdefault(c, []).extend(took)
                stop = open(o + "/stop_seconds").read().strip() if c.startswith("clairfs") else "-"
                row += " %s | %s |" % (" / ".join("%.2f" % t for t in took), stop)
            print(row)
            first.setdefault(c, []).append(float(ep["1"]["duration"]))
            upto.setdefault(c, []).append(float(head) + first[c][-1])
    if cpu_lines:
        print("\nthe daemons' CPU seconds over the run (stats.json `cpu`: user + system, by thread):")
        for line in cpu_lines:
            print("- " + line)
    if place_lines:
        print("\nplacement (stats.json `cluster.placement`, node 0's):")
        for line in place_lines:
            print("- " + line)
    span = lambda d: ", ".join("%s %.1f-%.1f s" % (c, min(v), max(v)) for c, v in d.items())
    print("\nfirst epoch over the repeats: %s; start to the end of epoch 1: %s" % (span(first), span(upto)))
    if ckpt:
        print("checkpoint saves over the repeats: %s" % ", ".join(
            "%s %.2f-%.2f s" % (c, min(v), max(v)) for c, v in saves.items()))
PY
for log in "$W"/out/*/daemons.log; do
  n=$(grep -ci 'warn' "$log" || true)
  [[ $n == 0 ]] || { say "$n warnings in $(basename "$(dirname "$log")")'s daemon log:"; grep -i warn "$log" | head -n 5 >&2; }
done
