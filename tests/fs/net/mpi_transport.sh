#!/usr/bin/env bash
# Four real MPI ranks on this host exchange pipelined reads, then notices.
set -uo pipefail
check=$1
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec) || { echo "SKIP: no mpiexec"; exit 77; }
out=$(timeout 120 "$MPIEXEC" -n 4 "$check" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: exit $rc"; exit 1; }
[[ $(grep -c "500 reads matched, 0 failed" <<<"$out") -eq 4 ]] || { echo "FAIL: not every rank matched"; exit 1; }
[[ $(grep -c "5 notices from each of 3 peers in order" <<<"$out") -eq 4 ]] || { echo "FAIL: not every rank got every peer's notices in order"; exit 1; }
echo "1 passed, 0 failed"
