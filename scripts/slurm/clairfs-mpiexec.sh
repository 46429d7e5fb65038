#!/bin/bash
# The same daemon step through MPICH's own launcher instead of srun's PMI:
# use this where Slurm was built without pmi2/pmix support for MPICH.
# Run it from inside an allocation; it starts one clairfsd per node and
# returns when all mounts are served.
set -euo pipefail
CLAIRFS=${CLAIRFS:-$HOME/clairfs/build/bin}
DATASET=${DATASET:?set DATASET to the clairfs-partition output}
MNT=${MNT:-/tmp/clairfs-$SLURM_JOB_ID/mnt}
LOCAL=${LOCAL:-'${SLURM_TMPDIR:-/tmp}/clairfs-'$SLURM_JOB_ID/packs}

srun --overlap --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --gres=none --mem=0 mkdir -p "$MNT"
mpiexec.mpich -launcher slurm -n "$SLURM_JOB_NUM_NODES" -ppn 1 \
  "$CLAIRFS/clairfsd" --dataset "$DATASET" --mount "$MNT" --local-dir "$LOCAL" &
echo $! > "clairfs-$SLURM_JOB_ID.pid"
srun --overlap --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --gres=none --mem=0 \
  "$CLAIRFS/clairfs-wait" "$MNT" --timeout 600
