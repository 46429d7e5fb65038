#!/usr/bin/env bash
# Starts N training processes on this host the way a cluster launcher does:
# one per rank with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
# set. (Debian's torch 1.13 torchrun fails at start-up on Python 3.11.)
# Rank r's arguments may contain {rank}, replaced by r.
#
# usage: run_ranks.sh N COMMAND [ARGS...]; exits non-zero if any rank failed.
set -uo pipefail
n=$1; shift
port=${MASTER_PORT:-$((20000 + RANDOM % 20000))}
pids=()
for ((r = 0; r < n; r++)); do
  args=()
  for x in "$@"; do args+=("${x//\{rank\}/$r}"); done
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "${args[@]}" &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' INT TERM
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
