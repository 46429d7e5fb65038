#!/usr/bin/env bash
# One large file read sequentially, cold (issue 28's target 2): a file of
# incompressible bytes on the throttled stand-in for a shared file system,
# read with dd
#   direct   from the stand-in itself;
#   epoch 0  through a fresh clairfsd mount whose pack sits on the stand-in,
#            while it stages that pack (the first epoch of a job);
#   staged   through the same mount once staged;
#   local    from a copy on the local disk.
# Page caches are dropped before each read; every process of the benchmark
# (the daemon too) is in the stand-in's throttle. Alternating repeats; prints
# MB/s per row and the ratios to the stand-in and to the local disk.
# --variant NAME=OPTIONS (repeatable) adds the two mount rows once more for
# clairfsd run with OPTIONS, in the same repeats (e.g. noahead="--frames-ahead 0").
# --remote runs two clairfsd ranks (mpiexec, two "nodes" on this host) and
# reads the file through rank 1's mount: its pack is homed on rank 0, so every
# frame comes over MPI from rank 0, which stages it (epoch 0) or has it staged.
#
# usage: scripts/bench/large_file.sh [--mib M] [--mbps B] [--iops I] [--repeats R] [--remote]
#                                    [--variant NAME=OPTIONS]... [-- clairfsd options]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$repo/${BUILD_DIR:-build}/bin
mib=1024 mbps=100 iops=500 repeats=3 remote=0
daemon_opts=()
variants=("")
while (($#)); do
  case $1 in
    --mib) mib=$2; shift 2 ;; --mbps) mbps=$2; shift 2 ;; --iops) iops=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;; --variant) variants+=("$2"); shift 2 ;;
    --remote) remote=1; shift ;;
    --) shift; daemon_opts=("$@"); break ;;
    *) echo "usage: $0 [--mib M] [--mbps B] [--iops I] [--repeats R] [-- clairfsd options]" >&2; exit 2 ;;
  esac
done
source "$repo/scripts/bench/throttle.sh"
bench_workspace large $((mib * 3 / 1024 + 2)) "$mbps" "$iops"
echo "bench: one file of $mib MiB on the stand-in ($PFS_DESC)" >&2

mkdir -p "$PFS_MNT/src"
head -c "$((mib << 20))" /dev/urandom >"$PFS_MNT/src/big.bin"
"$BIN/clairfs-partition" pack "$PFS_MNT/src" "$PFS_MNT/out" --partitions 1 >/dev/null
cp "$PFS_MNT/src/big.bin" "$W/local.bin"
pfs_enter

mbs() {  # mbs FILE: MB/s of a cold sequential read with dd
  drop_caches
  dd if="$1" of=/dev/null bs=1M 2>&1 | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") t = $(i - 1);
    printf "%.0f\n", '"$((mib << 20))"' / t / 1e6 }'
}
# The mount read, and the one whose rank stages the pack.
if ((remote)); then
  read_mnt=$W/mnt1 owner_mnt=$W/mnt0
  echo "bench: read through rank 1's mount, the pack homed on rank 0 (2 ranks)" >&2
else
  read_mnt=$W/mnt owner_mnt=$W/mnt
fi
mount_fresh() {  # mount_fresh [more clairfsd options]
  rm -rf "$W"/ssd*; mkdir -p "$W/mnt" "$W/mnt0" "$W/mnt1"
  drop_caches
  if ((remote)); then
    "$MPIEXEC" -n 2 "$BIN/clairfsd" --dataset "$PFS_MNT/out" --mount "$W/mnt{rank}" \
      --local-dir "$W/ssd{rank}" "${daemon_opts[@]}" "$@" >"$W/log" 2>&1 &
    launcher=$!
    "$BIN/clairfs-wait" "$W/mnt0" "$W/mnt1" --quiet --timeout 60 || { tail -20 "$W/log"; exit 1; }
    return
  fi
  "$BIN/clairfsd" --dataset "$PFS_MNT/out" --mount "$W/mnt" --local-dir "$W/ssd" "${daemon_opts[@]}" \
    "$@" >"$W/log" 2>&1 &
  launcher=$!
  "$BIN/clairfs-wait" "$W/mnt" --quiet --timeout 60 || { tail -20 "$W/log"; exit 1; }
}
staged() {
  /usr/bin/python3 - "$owner_mnt/.clairfs/stats.json" <<'PY'
import json, sys, time
while not json.load(open(sys.argv[1]))["cluster"]["staging"]["finished"]:
    time.sleep(0.2)
PY
}

declare -A rows
order=(direct)
for v in "${variants[@]}"; do order+=("epoch0${v:+ ${v%%=*}}" "staged${v:+ ${v%%=*}}"); done
order+=(local)
for ((r = 1; r <= repeats; r++)); do
  rows[direct]+=" $(mbs "$PFS_MNT/src/big.bin")"
  for v in "${variants[@]}"; do
    name=${v:+ ${v%%=*}}
    read -r -a extra <<<"${v#*=}"
    [[ -z $v ]] && extra=()
    mount_fresh "${extra[@]}"
    rows["epoch0$name"]+=" $(mbs "$read_mnt/big.bin")"
    cp "$owner_mnt/.clairfs/stats.json" "$W/stats-epoch0${name// /-}-$r.json"
    staged
    rows["staged$name"]+=" $(mbs "$read_mnt/big.bin")"
    ((remote)) && cp "$read_mnt/.clairfs/stats.json" "$W/stats-reader${name// /-}-$r.json"
    stop_ranks
  done
  rows[local]+=" $(mbs "$W/local.bin")"
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(median <<<"${rows[direct]}") l=$(median <<<"${rows[local]}")
echo "| read ($mib MiB, $mbps MB/s stand-in) | MB/s (each repeat) | median | vs stand-in | vs local disk |"
echo "|---|---|---|---|---|"
for row in "${order[@]}"; do
  m=$(median <<<"${rows[$row]}")
  echo "| $row |${rows[$row]} | $m | $(awk "BEGIN { printf \"%.2fx\", $m / $d }") | $(awk "BEGIN { printf \"%.2fx\", $m / $l }") |"
done
/usr/bin/python3 - "$W"/stats-epoch0-*.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    c = json.load(open(path))["cluster"]
    s = c["source"]
    print("%s: read from the stand-in %.0f MiB by staging, %.0f MiB by reads (kept %.0f MiB), "
          "%.0f MiB twice" % (path.rsplit("/", 1)[1], s["staged_bytes"] / 2**20,
                             s["direct_bytes"] / 2**20, c["staging"]["bytes_kept"] / 2**20,
                             s["reread_bytes"] / 2**20))
PY
((remote)) || exit 0
/usr/bin/python3 - "$W"/stats-reader*.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    p = json.load(open(path))["cluster"]["peers"]
    print("%s: %d frames from the peer, %d of them asked for ahead and taken "
          "(%d dropped, %d failed); peer failures %d"
          % (path.rsplit("/", 1)[1], p["reads"], p["ahead_taken"], p["ahead_dropped"],
             p["ahead_failed"], p["failures"]))
PY
