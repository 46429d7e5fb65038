#!/usr/bin/env bash
# The job template under a real Slurm: a private cluster of two nodes, each a
# network namespace with its own slurmd (scripts/slurm/local-cluster.sh), and
# scripts/slurm/clairfs-job.sbatch submitted unchanged with sbatch:
# - a training job: daemons up on both nodes, PyTorch DDP (2 tasks) reads every
#   sample through the mounts byte for byte, reads cross the nodes over the
#   veths, stats saved, the job ends with nothing mounted or running;
# - scancel of a running job: the same, nothing left;
# - a training step that fails: its exit status is the job's;
# - the time limit: the USR1 trap stops everything before Slurm kills it;
# - the daemons started by MPICH's mpiexec instead of srun --mpi=pmi2;
# - a Horovod + Keras job (scripts/keras/train_dataset.py, tf-keras2 venv):
#   clairfs-run in front of `srun --mpi=pmi2`, Horovod's 2 ranks on 2 nodes.
#   Horovod's own MPI runs over shared memory here (UCX_TLS=sm,self): with
#   UCX 1.13's TCP transport a rank can spin forever in MPI_Finalize after the
#   training (openucx/ucx#8738; 2 jobs of 17 here). The daemons keep TCP.
set -uo pipefail
BIN=$CLAIRFS_BIN
SRC=$CLAIRFS_SRC
PY=/usr/bin/python3
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
skip() {  # in CI the packages are installed by setup.sh: a skip there is a failure
  if [[ ${CI:-} == true ]]; then echo "FAIL (CI must not skip): $*"; exit 1; fi
  echo "SKIP: $*"; exit 77
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, slurmd)"
for b in slurmctld slurmd sbatch munged; do
  command -v "$b" >/dev/null || skip "$b missing (scripts/setup.sh installs slurmctld slurmd slurm-client munge)"
done
ip netns list >/dev/null 2>&1 || skip "ip netns does not work here"
[[ -c /dev/fuse ]] || skip "/dev/fuse missing"
$PY -c "import torch, torchvision" 2>/dev/null || skip "python3-torch/torchvision missing (scripts/setup.sh)"

T=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-slurm.XXXXXX")
CLUSTER=$SRC/scripts/slurm/local-cluster.sh
cleanup() {
  "$CLUSTER" stop --dir "$T" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
export CLAIRFS_CLUSTER_SHARE=$BIN
"$CLUSTER" start --dir "$T" --nodes 2 || { echo "FAIL local cluster did not start"; tail -n 20 "$T"/log/*; exit 1; }
export SLURM_CONF=$T/slurm.conf
source "$T/cluster.env"  # net, nodes, prefix

# The dataset on the "shared file system" (every node sees $T).
$PY "$SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 24 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 >/dev/null 2>&1 || { fail "pack"; exit 1; }

slurmd_pid() { cat "$T/run/slurmd-node$1.pid"; }
# What a node has mounted and running (its own mount namespace, its own netns).
# (Only the template's mounts count: the host's own propagate into the nodes.)
node_mounts() { awk '$3 ~ /^fuse/ && $2 ~ /^\/tmp\/clairfs-[0-9]+\//' "/proc/$(slurmd_pid "$1")/mounts" | wc -l; }
node_procs() {
  local p
  for p in $(ip netns pids "$prefix-node$1"); do
    [[ $p == $(slurmd_pid "$1") ]] || ps -o comm= -p "$p"
  done | grep -v '^$' || true
}
left_behind() {  # empty when no node has a mount or a process besides slurmd
  local i
  for ((i = 0; i < 100; i++)); do  # slurmstepd may take a moment to finish
    [[ -z $(node_procs 0)$(node_procs 1) ]] && break
    sleep 0.2
  done
  for ((i = 0; i < nodes; i++)); do
    [[ $(node_mounts $i) -eq 0 ]] || echo "node$i: $(node_mounts $i) mounts"
    [[ -z $(node_procs $i) ]] || echo "node$i: $(node_procs $i | tr '\n' ' ')"
  done
}
# veth counters on the host side: what a node sent is what the host received.
sent_by() { ip -s -j link show "${prefix}v$1" | $PY -c "import json,sys; print(json.load(sys.stdin)[0]['stats64']['rx']['bytes'])"; }
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
gone() {  # gone JOB SECONDS: true once the job has left squeue
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    [[ -z $(squeue -h -j "$1" -o %i 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  return 1
}
# finished JOB: waits for the job to end (polling every 0.2 s; `sbatch --wait`
# polls ever more slowly, up to every 10 s) and returns its exit status, as
# `sbatch --wait` does (MinJobAge keeps the ended job in scontrol for 300 s).
finished() {
  local i info
  for ((i = 0; i < 3000; i++)); do
    info=$(scontrol -o show job "$1" 2>/dev/null)
    [[ $info =~ JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED) ]] || break
    sleep 0.2
  done
  [[ $info =~ " ExitCode="([0-9]+):([0-9]+) ]] || { echo "no exit code for job $1: $info" >&2; return 1; }
  ((BASH_REMATCH[2] == 0)) && return "${BASH_REMATCH[1]}"
  return $((128 + BASH_REMATCH[2]))
}
# submit DIR [sbatch options]: the template with the paths in the environment.
submit() {
  local d=$1; shift
  mkdir -p "$d"
  CLAIRFS=$BIN DATASET=$T/packed PYTHON=$PY TRAIN=$SRC/scripts/train.py \
    sbatch --parsable --chdir="$d" --output="$d/job.out" --nodes=2 --ntasks-per-node=1 \
    --cpus-per-task=2 "$@" "$SRC/scripts/slurm/clairfs-job.sbatch"
}

# --- 1. a training job, end to end.
before0=$(sent_by 0) before1=$(sent_by 1)
job=$(TRAIN_ARGS="--epochs 2 --workers 1 --batch-size 8 --seed 3 --sample-log $T/j1/samples --report $T/j1/report.json" \
  submit "$T/j1" --time=5)
finished "$job"; rc=$?
[[ $rc -eq 0 ]] && pass "job $job: exit 0" || { fail "job exit $rc"; cat "$T/j1/job.out"; tail -n 20 "$T"/j1/clairfs-*/*.log; }
grep -q "clairfs-run: 2 daemon(s) serve /tmp/clairfs-$job/mnt" "$T/j1/job.out" && pass "both daemons served the mount" \
  || { fail "daemons not reported ready"; cat "$T/j1/job.out"; }
$PY - "$T/data/train" "$T/j1" <<'PY' && pass "every sample of 2 epochs read through the mounts, identical to the source" || fail "samples differ"
import glob, hashlib, os, sys
root, out = sys.argv[1], sys.argv[2]
want = []
for c in sorted(os.listdir(root)):
    for f in sorted(os.listdir(os.path.join(root, c))):
        want.append(hashlib.blake2b(open(os.path.join(root, c, f), "rb").read(), digest_size=8).hexdigest())
seen = {}
for f in glob.glob(out + "/samples.rank*"):
    for line in open(f):
        e, i, h = line.split()
        seen.setdefault(int(e), set()).add(int(i))
        if want[int(i)] != h:
            print("sample", i, "differs"); sys.exit(1)
ok = sorted(seen) == [0, 1] and all(s == set(range(len(want))) for s in seen.values())
print("ranks logged %d epochs; %d files each" % (len(seen), len(want)))
sys.exit(0 if ok else 1)
PY
stats=("$T"/j1/clairfs-"$job"/stats-node{0,1}.json)
if [[ -s ${stats[0]} && -s ${stats[1]} ]] && grep -q "stats: $T/j1/clairfs-$job/stats-\*.json" "$T/j1/job.out"; then
  pass "stats.json of both nodes saved, their place printed"
  for i in 0 1; do
    peers=$(json "${stats[$i]}" 'd["cluster"]["peers"]["reads"]')
    served=$(json "${stats[$i]}" 'd["cluster"]["served_to_peers"]["bytes"]')
    sent=$(($(sent_by $i) - $([[ $i == 0 ]] && echo "$before0" || echo "$before1")))
    [[ $peers -gt 0 && $served -gt 0 ]] && pass "node$i read $peers times from its peer and served it $served bytes" \
      || fail "node$i: peers.reads=$peers served_to_peers.bytes=$served"
    [[ $sent -ge $served ]] && pass "node$i's veth carried those bytes ($sent bytes sent)" \
      || fail "node$i sent $sent bytes over its veth, less than the $served it served (shared memory?)"
  done
else
  fail "stats missing"; cat "$T/j1/job.out"
fi
grep -q "unmounted /tmp/clairfs-$job/mnt" "$T/j1/clairfs-$job/clairfsd-node0.log" \
  && grep -q "unmounted /tmp/clairfs-$job/mnt" "$T/j1/clairfs-$job/clairfsd-node1.log" \
  && pass "both daemons unmounted cleanly" || fail "a daemon did not log its unmount"
[[ -z $(left_behind) ]] && pass "after the job: no mount, no process left on the nodes" || fail "left behind: $(left_behind)"
[[ -z $(ls "$T"/nodes/node*/tmp/ | grep clairfs-packs) ]] && pass "staged packs removed from the nodes" \
  || fail "packs left in the nodes' /tmp"

# --- 2. scancel while training runs.
job=$(TRAIN_ARGS="--epochs 100000 --workers 1 --batch-size 8" submit "$T/j2" --time=5)
for ((i = 0; i < 300; i++)); do grep -q "^epoch 1:" "$T/j2/job.out" 2>/dev/null && break; sleep 0.2; done
if grep -q "^epoch 1:" "$T/j2/job.out"; then
  pass "job $job training"
  [[ $(node_mounts 0) -eq 1 && $(node_mounts 1) -eq 1 ]] && pass "each node has its mount" || fail "mounts while training: $(node_mounts 0) $(node_mounts 1)"
  # The daemons' MPI traffic: TCP from node0's address to node1's, over the bridge.
  conns=$(nsenter --net="/run/netns/$prefix-node0" ss -tnpH state established 2>/dev/null \
    | grep '"clairfsd"' | grep -c "$net\.10:.* $net\.11:")
  [[ $conns -gt 0 ]] && pass "node0's daemon talks to node1's over TCP between the namespaces ($conns connections)" \
    || { fail "no TCP connection between the daemons"; nsenter --net="/run/netns/$prefix-node0" ss -tnpH; }
  scancel "$job"
  gone "$job" 60 && pass "scancel: job gone" || fail "job $job still in squeue 60 s after scancel"
  sleep 1
  [[ -z $(left_behind) ]] && pass "scancel: no mount, no process left on the nodes" || fail "left behind after scancel: $(left_behind)"
  grep -q "unmounted /tmp/clairfs-$job/mnt" "$T/j2/clairfs-$job/clairfsd-node1.log" && pass "scancel: daemon unmounted cleanly" \
    || echo "note: the daemon log does not show a clean unmount (killed at KillWait?)"
else
  fail "job $job did not start training"; cat "$T/j2/job.out"; scancel "$job"; gone "$job" 60
fi

# --- 3. a training step that fails: its status (srun's: the highest of its
# tasks, 2 from argparse or 143 for a rank ended by --kill-on-bad-exit) is the job's.
job=$(TRAIN_ARGS="--epochs 1 --no-such-option" submit "$T/j3" --time=5)
finished "$job"; rc=$?
said=$(sed -n 's/.*the command failed (exit status \([0-9]*\)); the daemons were stopped, their logs kept in .*/\1/p' "$T/j3/job.out")
[[ -n $said && $rc -eq $said && $rc -ne 0 ]] && pass "failing training step: job exit $rc, the training step's" \
  || { fail "job exit $rc, training step's '$said'"; cat "$T/j3/job.out"; }
grep -q "their logs kept in $T/j3/clairfs-$job" "$T/j3/job.out" && grep -q "unrecognized arguments: --no-such-option" "$T/j3/job.out" \
  && [[ -s $T/j3/clairfs-$job/clairfsd-node0.log ]] && pass "failure said, daemon logs kept" || { fail "failure message"; cat "$T/j3/job.out"; }
[[ -z $(left_behind) ]] && pass "failed job: nothing left" || fail "left behind: $(left_behind)"

# --- 4. the time limit: USR1 (--signal=B:USR1@...) stops the job's clairfs first.
# Slurm sends the signal when it next checks, up to a minute before it is due:
# due 80 s after the start, it comes 20 s after it at the earliest, when the
# daemons are up (with --time=1 and USR1@50 it once came before clairfs-run
# had started).
job=$(TRAIN_ARGS="--epochs 100000 --workers 1 --batch-size 8" submit "$T/j4" --time=3 --signal=B:USR1@100)
gone "$job" 200 || { fail "job $job still there after 200 s"; scancel "$job"; gone "$job" 60; }
grep -q "clairfs-run: got SIGUSR1" "$T/j4/job.out" && pass "time limit: USR1 reached clairfs-run" || { fail "no USR1"; cat "$T/j4/job.out"; }
grep -q "unmounted /tmp/clairfs-$job/mnt" "$T/j4/clairfs-$job/clairfsd-node0.log" && [[ -s $T/j4/clairfs-$job/stats-node0.json ]] \
  && pass "time limit: daemons unmounted, stats saved" || fail "time limit: no clean stop"
grep -q "DUE TO TIME LIMIT" "$T/j4/job.out" && fail "the job reached its time limit" || pass "stopped before the time limit"
[[ -z $(left_behind) ]] && pass "time limit: nothing left" || fail "left behind: $(left_behind)"

# --- 5. the daemons through MPICH's own launcher (mpiexec -launcher slurm).
job=$(CLAIRFS_LAUNCHER=mpiexec TRAIN_ARGS="--epochs 1 --workers 1 --batch-size 8" submit "$T/j5" --time=5)
finished "$job"; rc=$?
[[ $rc -eq 0 ]] && pass "CLAIRFS_LAUNCHER=mpiexec: job exit 0" || { fail "mpiexec job exit $rc"; cat "$T/j5/job.out"; }
for i in 0 1; do
  f=$T/j5/clairfs-$job/stats-node$i.json
  [[ -s $f && $(json "$f" 'd["cluster"]["peers"]["reads"]') -gt 0 ]] && pass "mpiexec: node$i read from its peer" \
    || fail "mpiexec: node$i stats"
done
[[ $(grep -c "unmounted /tmp/clairfs-$job/mnt" "$T/j5/clairfs-$job/clairfsd-all.log") -eq 2 ]] \
  && pass "mpiexec: both daemons unmounted cleanly" || { fail "mpiexec: unmounts"; tail "$T/j5/clairfs-$job/clairfsd-all.log"; }
[[ -z $(left_behind) ]] && pass "mpiexec: nothing left" || fail "left behind: $(left_behind)"

# --- 6. a Horovod + Keras job under srun (MPICH through Slurm's pmi2).
HVD_PY=${CLAIRFS_VENVS:-$SRC/.venvs}/tf-keras2/bin/python
if [[ -x $HVD_PY ]]; then
  mkdir -p "$T/j6"
  job=$(sbatch --parsable --chdir="$T/j6" --output="$T/j6/job.out" --nodes=2 --ntasks-per-node=1 \
    --cpus-per-task=2 --time=10 --wrap "TF_CPP_MIN_LOG_LEVEL=2 '$BIN/clairfs-run' \
      --dataset '$T/packed' --mount /tmp/clairfs-hvd/mnt -- env UCX_TLS=sm,self srun --mpi=pmi2 '$HVD_PY' \
      '$SRC/scripts/keras/train_dataset.py' /tmp/clairfs-hvd/mnt/train --epochs 1 --batch-size 8 \
      --image-size 32 --report '$T/j6/report.json' --sample-log '$T/j6/samples'")
  finished "$job"; rc=$?
  [[ $rc -eq 0 && $(json "$T/j6/report.json" 'd["ranks"]') -eq 2 ]] \
    && pass "Horovod under srun: job exit 0, hvd.size() 2, $(json "$T/j6/report.json" 'len(d["epochs"])') epoch" \
    || { fail "Horovod job exit $rc"; tail -n 30 "$T/j6/job.out"; }
  n0=$(wc -l <"$T/j6/samples.rank0" 2>/dev/null) n1=$(wc -l <"$T/j6/samples.rank1" 2>/dev/null)
  [[ ${n0:-0} -gt 0 && $n0 -eq ${n1:-0} ]] && pass "Horovod: both ranks trained on their shard ($n0 samples each)" \
    || fail "Horovod sample logs: '$n0' '$n1'"
  [[ -z $(left_behind) ]] && pass "Horovod job: nothing left" || fail "left behind: $(left_behind)"
else
  skip "no Horovod venv $HVD_PY (scripts/setup.sh creates it)"
fi

echo "$failures failures"
[[ $failures -eq 0 ]]
