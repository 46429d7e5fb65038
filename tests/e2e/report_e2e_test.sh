#!/usr/bin/env bash
# Zero configuration: 2 clairfsd ranks given no prefetch settings at all, each
# with ram_cache a third of the dataset, and 2 training ranks of a PyTorch job
# that mentions clairfs nowhere (tests/e2e/report_train.py), rank r reading
# through daemon r with the order reporter on its PYTHONPATH as clairfs-run
# puts it. Three jobs: ImageFolder + DistributedSampler(seed), a Dataset of its
# own that opens each file twice + DistributedSampler (both ranks on one
# daemon: the files of such a Dataset are learned from the opens of the node's
# ranks, so one node of two would know half of them after the first epoch),
# and ImageFolder + an unseeded RandomSampler; the second once more beside
# two processes spinning on the cores (a case named NAME-busy). Each must
# read exactly the source's bytes, draw the same samples and numbers as
# without the reporter, and after the first epoch find its files ready: every
# open but the first 2 batches of each rank's epoch (drawn at the epoch's
# start, so not known before it).
set -uo pipefail
BIN=$CLAIRFS_BIN
PY=/usr/bin/python3
$PY -c "import torch, torchvision" || { echo "FAIL: python3-torch/torchvision not importable by $PY (scripts/setup.sh installs them)"; exit 1; }
[[ -f $BIN/report/sitecustomize.py ]] || { echo "FAIL: no order reporter beside clairfs-run in $BIN"; exit 1; }
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" report

# The third of the dataset in RAM must hold the node's loaders' read-ahead
# several times over, as on any real dataset: with 240 files it held 80, and
# the two ranks' loaders (2 workers x 2 batches of 8 each, one batch being
# consumed) had up to 80 in flight; opens reach the daemon in bursts, late,
# so it could not free room fast enough (up to 33 stalls an epoch, at the
# 5th and 6th batches of an epoch, in CI).
EPOCHS=3 BATCH=8 WORKERS=2
$PY "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$T/data" --classes 4 --per-class 150 --size 64 >/dev/null || exit 1
"$BIN/clairfs-partition" pack "$T/data" "$T/packed" --partitions 4 >/dev/null || exit 1
bytes=$(find "$T/data/train" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
ram=$((bytes / 3))

fail=0
start_daemons() {  # NAME NODES [OPTION...]: daemon r mounts $T/mnt{r}
  "$MPIEXEC" -n "$2" "$BIN/clairfsd" --dataset "$T/packed" --mount "$T/mnt{rank}" \
    --local-dir "$T/ssd{rank}" --ram-cache "$ram" "${@:3}" >"$T/$1.daemons.log" 2>&1 &
  launcher=$!
  local mounts=("$T/mnt0")
  (($2 > 1)) && mounts+=("$T/mnt1")
  "$BIN/clairfs-wait" "${mounts[@]}" --timeout 60 --quiet ||
    { echo "FAIL $1: mounts"; cat "$T/$1.daemons.log"; return 1; }
}
run_case() {  # NAME DATASET SAMPLER NODES CHECK [OPTION...]: CHECK is the report's
  # settings_check wanted ("-" for "", else a word it contains); OPTIONs go to clairfsd
  local name=$1 dataset=$2 sampler=$3 nodes=$4 check=$5 mnt="$T/mnt{rank}"
  local opts=("${@:6}")
  ((nodes == 1)) && mnt="$T/mnt0"
  start_daemons "$name" "$nodes" "${opts[@]}" || return 1
  local args=(--dataset "$dataset" --sampler "$sampler" --epochs $EPOCHS --workers $WORKERS
              --batch-size $BATCH --seed 3)
  # The same job, seeded alike, without the reporter: same samples, same draws.
  CLAIRFS_REPORT=0 PYTHONPATH="$BIN/report" "$CLAIRFS_SRC/scripts/run_ranks.sh" 2 \
    $PY "$CLAIRFS_SRC/tests/e2e/report_train.py" --data "$mnt/train" "${args[@]}" \
    --log "$T/$name.off" 2>"$T/$name.off.err" || { echo "FAIL $name: the job without the reporter"; cat "$T/$name.off.err"; return 1; }
  # Stats are counted from here: the run without the reporter read every file
  # once, so the daemons' planners start over for the measured run.
  kill -TERM "$launcher"; wait "$launcher"
  start_daemons "$name" "$nodes" "${opts[@]}" || return 1
  # A case named *-busy runs beside two processes spinning on the 2 cores.
  local spinners=()
  if [[ $name == *-busy ]]; then
    for _ in 1 2; do (while :; do :; done) & spinners+=($!); done
  fi
  PYTHONPATH="$BIN/report" "$CLAIRFS_SRC/scripts/run_ranks.sh" 2 \
    $PY "$CLAIRFS_SRC/tests/e2e/report_train.py" --data "$mnt/train" "${args[@]}" \
    --log "$T/$name.on" 2>"$T/$name.on.err"
  local job=$?
  ((${#spinners[@]})) && { kill "${spinners[@]}"; wait "${spinners[@]}" 2>/dev/null; }
  ((job == 0)) || { echo "FAIL $name: the job with the reporter"; cat "$T/$name.on.err"; return 1; }
  for ((d = 0; d < nodes; d++)); do cp "$T/mnt$d/.clairfs/stats.json" "$T/$name.stats$d.json"; done
  kill -TERM "$launcher"; wait "$launcher"
  launcher=""
  $PY - "$T" "$name" "$BATCH" "$WORKERS" "$nodes" "$check" <<'PY'
import hashlib, json, os, sys
t, name, batch, workers, nodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
check = sys.argv[6]
root = os.path.join(t, "data", "train")
source = {}
for d, _, names in os.walk(root):
    for n in names:
        p = os.path.join(d, n)
        source[os.path.relpath(p, root)] = hashlib.sha1(open(p, "rb").read()).hexdigest()
digests = set(source.values())
for r in (0, 1):
    on = open(os.path.join(t, "%s.on.rank%d" % (name, r))).read()
    off = open(os.path.join(t, "%s.off.rank%d" % (name, r))).read()
    assert on == off, "%s rank %d: the reporter changed what the job drew or read" % (name, r)
    for line in on.splitlines():
        if line.startswith("rng "):
            continue
        epoch, path, sha = line.split(" ")
        assert sha in digests, "%s rank %d: a sample's bytes are not a source file's" % (name, r)
        if path != "-":
            assert source[path] == sha, "%s rank %d: %s read wrong bytes" % (name, r, path)
    stderr = open(os.path.join(t, "%s.on.err" % name)).read()
    assert "clairfs-report" not in stderr, stderr
for r in range(nodes):
    s = json.load(open(os.path.join(t, "%s.stats%d.json" % (name, r))))
    rep, p = s["report"], s["prefetch"]
    assert rep["segments"] >= 3 and rep["connections_closed_bad"] == 0 and rep["first_error"] == "", rep
    # Settings given beside the report: checked against it, the report followed.
    got = rep["settings_check"]
    assert (got == "") if check == "-" else (check in got), "%s: settings_check %r, want %r" % (name, got, check)
    assert p["sampler"] == "reported" and p["enabled"] and not p["lost"], p
    assert s["errors"]["corruption"] == 0 and s["errors"]["io"] == 0, s["errors"]
    # The epochs as the job counts them: one loader, its epochs 0, 1, 2.
    assert [(e.get("loader"), e.get("loader_epoch")) for e in p["per_epoch"]] == \
        [(1, e["epoch"]) for e in p["per_epoch"]], p["per_epoch"]
    later = [e for e in p["per_epoch"] if e["epoch"] >= 1]
    assert later, p["per_epoch"]
    for e in later:
        # Each rank's order is drawn as its epoch starts and its loader asks
        # for W x 2 batches at once, with the report: that first request may
        # wait for its files (on a loaded machine more than its first 2
        # batches did: 18 stalls once); everything after it is ready.
        allowed = 2 * workers * batch * (2 // nodes)
        assert e["deviations"] == 0, (name, r, e)
        assert e["stalls"] <= allowed, "%s daemon %d epoch %d: %d stalls > %d" % (name, r, e["epoch"], e["stalls"], allowed)
        print("%s daemon %d epoch %d: %d of %d opens ready, %d stalls" % (name, r, e["epoch"], e["ready"], e["opens"], e["stalls"]))
if nodes == 2:
    # Staging learns when the job first reads each file of the daemon's packs
    # from its own ranks' reports and from the other daemon's (first-use
    # notices): between them every file the first epoch reads, though each
    # rank reads only its half under DistributedSampler.
    known = [json.load(open(os.path.join(t, "%s.stats%d.json" % (name, r))))["cluster"]["staging"]["first_use_files"]
             for r in range(nodes)]
    print("%s: first reads known to staging %s of %d files" % (name, known, len(source)))
    assert sum(known) >= len(source) and min(known) > 0, (name, known, len(source))
PY
}

# The reporter's open() spares the isatty ioctl CPython makes on every file
# it opens (FUSE sends it to the daemon): strace sees it only without.
command -v strace >/dev/null || { echo "FAIL: strace missing (scripts/setup.sh installs it)"; exit 1; }
start_daemons ioctl 1 || exit 1
f=$(find "$T/mnt0/train" -type f | head -1)
tcgets() {  # the TCGETS ioctls on $f of a Python open+read, reporter on or off ($1)
  CLAIRFS_REPORT=$1 PYTHONPATH="$BIN/report" strace -qq -f -e trace=ioctl -P "$f" \
    $PY -c 'import sys; open(sys.argv[1], "rb").read()' "$f" 2>&1 >/dev/null | grep -c TCGETS
}
off=$(tcgets 0) on=$(tcgets 1)
kill -TERM "$launcher"; wait "$launcher"; launcher=""
if [[ $off -ge 1 && $on -eq 0 ]]; then
  echo "ok: isatty ioctls on a mounted file: $off without the reporter, $on with it"
else
  echo "FAIL: isatty ioctls on a mounted file: $off without the reporter, $on with it"; fail=1
fi

# Settings for DistributedSampler(seed=3) of the job, right and wrong.
given=(--prefetch-sampler torch-distributed --prefetch-root train --prefetch-epochs 3
  --prefetch-world-size 2 --prefetch-ranks-per-node 1 --prefetch-batch-size 8 --prefetch-workers 2)
for c in "folder-dist imagefolder distributed 2 -" "twice-dist twice distributed 1 -" \
  "twice-dist-busy twice distributed 1 -" \
  "folder-random imagefolder random 2 -" \
  "folder-right imagefolder distributed 2 agree ${given[*]} --prefetch-seed 3" \
  "folder-wrong imagefolder distributed 2 prefetch_seed ${given[*]} --prefetch-seed 4"; do
  # REPORT_E2E_CASES (a regex of case names) runs some of them only.
  [[ ${c%% *} =~ ^(${REPORT_E2E_CASES:-.*})$ ]] || continue
  # shellcheck disable=SC2086
  run_case $c || { echo "FAIL: case ${c%% *}"; fail=1; }
done
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
