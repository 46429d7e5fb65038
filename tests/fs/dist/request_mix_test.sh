#!/usr/bin/env bash
# Stress test of the FUSE request path: many concurrent readers mixing warm,
# RAM, cold and remote files, every byte checked.
#
# A tree of ~2600 files (empty, small incompressible = raw, small text = zstd,
# and files of up to 1 MiB over the 64 KiB frame size = framed; ~100 MB) is
# packed into 4 partitions with one replica and served by 2 ranks, so half
# of every mount's packs live on the other rank. Each daemon's RAM cache is a
# quarter of the data, so its LRU evicts. 8 readers per mount, 16 at once
# (tests/fs/dist/request_mix_reader.py), read seeded samples whole, in chunks and
# with random pread()s (zero-length, past and across EOF), read files twice
# (the second time from the kernel's page cache) and drop files' page cache
# with POSIX_FADV_DONTNEED (the next read goes back to the daemon: its RAM or
# a pack). Any byte that differs from the source, a short read or an error
# fails the test, naming the file, offset and length.
#
# Then each rank's stats.json must show that every path was taken: READs
# answered from the RAM cache, READs that loaded from packs, pack reads
# answered by the peer, and fewer READs than the readers' reads that returned
# bytes (the rest were the page cache's). One file is also followed through the paths one
# read at a time. The logs must hold no error and both ranks must exit 0 on
# SIGTERM.
set -uo pipefail
BIN=$CLAIRFS_BIN
RANK=$CLAIRFS_SRC/tests/fs/dist/rank.sh  # see there: keeps survivors alive under hydra
READER=$CLAIRFS_SRC/tests/fs/dist/request_mix_reader.py
PY=/usr/bin/python3
READERS_PER_MOUNT=8
source "$CLAIRFS_SRC/tests/fs/dist/ranks_lib.sh" request-mix
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
snapshot() { cp "$T/mnt$1/.clairfs/stats.json" "$2"; }  # snapshot RANK FILE

# --- The source tree. Text is a slice of a long run of words from a small
# vocabulary (zstd halves it or better); random bytes do not compress. Sizes
# include the edges of one frame (65535, 65536, 65537) and of pages.
$PY - "$T/src" <<'PYEOF' || { echo "FAIL could not write the source tree"; exit 1; }
import os, random, sys
root = sys.argv[1]
rng = random.Random(20240611)
FRAME = 65536
vocab = [bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(300)]
text = b" ".join(rng.choices(vocab, k=700000)) + b"\n"

def text_bytes(n):
    start = rng.randrange(len(text) - n) if n < len(text) else 0
    return text[start:start + n]

def mixed_bytes(n):  # runs of text and random bytes that do not line up with frames
    out = bytearray()
    while len(out) < n:
        run = rng.randint(1000, 90000)
        out += text_bytes(run) if rng.random() < 0.5 else rng.randbytes(run)
    return bytes(out[:n])

def small_size():
    return rng.choice([1, 2, 100, 4095, 4096, 4097, FRAME - 1, FRAME,
                       rng.randint(1, 8192), rng.randint(1, FRAME), rng.randint(1, FRAME)])

def large_size():
    return rng.choice([FRAME + 1, 2 * FRAME, 2 * FRAME + 1, 1 << 20,
                       rng.randint(FRAME + 1, 1 << 20), rng.randint(FRAME + 1, 1 << 20)])

def put(i, kind, data):
    d = os.path.join(root, "d%02d" % (i % 32))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "%s-%04d.bin" % (kind, i)), "wb") as f:
        f.write(data)

kinds = ["empty"] * 24 + ["raw"] * 1250 + ["zstd"] * 1250 + ["framed"] * 120
for i, kind in enumerate(kinds):
    if kind == "empty":
        put(i, kind, b"")
    elif kind == "raw":
        put(i, kind, rng.randbytes(small_size()))
    elif kind == "zstd":
        put(i, kind, text_bytes(small_size()))
    else:
        n = large_size()
        put(i, kind, rng.choice([rng.randbytes, text_bytes, mixed_bytes])(n))
PYEOF
files=$(find "$T/src" -type f | wc -l)
bytes=$(find "$T/src" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "source: $files files, $bytes bytes"

# --- Packed with 64 KiB frames: all three codecs must occur.
"$BIN/clairfs-partition" pack "$T/src" "$T/out" --partitions 4 --replicas 1 --frame-size 65536 \
  >"$T/pack.log" 2>&1 || { fail "pack"; cat "$T/pack.log"; exit 1; }
"$BIN/clairfs-partition" inspect "$T/out" --json >"$T/inspect.json" || { fail "inspect"; exit 1; }
codecs=$(json "$T/inspect.json" '" ".join("%s=%d" % (c, d["codecs"][c]) for c in ("raw", "zstd", "framed"))')
[[ $codecs =~ raw=[1-9].*zstd=[1-9].*framed=[1-9] ]] && pass "codecs in the packs: $codecs" \
  || fail "a codec is missing from the packs: $codecs"

# --- Two ranks, a RAM cache of a quarter of the data each.
ram=$((bytes / 4))
mkdir -p "$T"/mnt{0,1}
"$MPIEXEC" -disable-auto-cleanup -n 2 "$RANK" "$BIN/clairfsd" --dataset "$T/out" \
  --mount "$T/mnt{rank}" --local-dir "$T/ssd{rank}" --ram-cache "$ram" \
  --shutdown-wait-ms 3000 >"$T/log" 2>&1 &
launcher=$!
"$BIN/clairfs-wait" "$T"/mnt{0,1} --timeout 60 --quiet || { fail "mounts not ready"; cat "$T/log"; exit 1; }
# Staged copies first, so that a rank's own packs are read from its local dir.
for i in $(seq 1 600); do
  staged=0
  for r in 0 1; do
    [[ $(json "$T/mnt$r/.clairfs/stats.json" 'd["cluster"]["staging"]["finished"]') == True ]] \
      && staged=$((staged + 1))
  done
  [[ $staged -eq 2 ]] && break
  sleep 0.1
done
[[ $staged -eq 2 ]] && pass "both ranks staged their packs" || fail "staging did not finish in 60 s"

# --- The readers: all 16 at once; any of them failing fails the test.
start=$SECONDS
pids=()
for r in 0 1; do
  for k in $(seq 1 $READERS_PER_MOUNT); do
    seed=$((r * 100 + k))
    timeout -k 10 300 $PY "$READER" "$T/src" "$T/mnt$r" --seed $seed --files 1000 --rounds 6 \
      >"$T/reader$seed.out" 2>"$T/reader$seed.err" &
    pids+=("$!:$r:$seed")
  done
done
issued=(0 0)
for p in "${pids[@]}"; do
  IFS=: read -r pid r seed <<<"$p"
  wait "$pid"
  rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "reader $seed on mount $r exited with $rc"
    head -n 20 "$T/reader$seed.err"
    continue
  fi
  n=$(json "$T/reader$seed.out" 'd["data_reads"]')
  issued[r]=$((issued[r] + n))
done
echo "readers took $((SECONDS - start)) s"
for r in 0 1; do
  outs=()
  for k in $(seq 1 $READERS_PER_MOUNT); do outs+=("$T/reader$((r * 100 + k)).out"); done
  $PY - "${outs[@]}" <<'PYEOF'
import json, sys
tot = {}
for f in sys.argv[1:]:
    try:
        d = json.loads(open(f).read().splitlines()[-1])
    except (IndexError, ValueError):
        continue
    patterns = d.pop("patterns", {})
    d.pop("seed", None)
    for k, v in list(d.items()) + list(patterns.items()):
        tot[k] = tot.get(k, 0) + v
print("readers of this mount:", " ".join("%s=%d" % kv for kv in sorted(tot.items())))
PYEOF
done

# --- Every path was taken. requests.read counts the READs that reached the
# daemon; served.ram_cache/local_pack split those answered with bytes by
# source; cluster.peers counts the pack reads the other rank answered.
for r in 0 1; do
  snapshot $r "$T/stats$r.json"
  read -r reads ram_reqs pack_reqs peer_reads fallback evictions over <<<"$(json "$T/stats$r.json" \
    '" ".join(str(x) for x in (d["requests"]["read"], d["served"]["ram_cache"]["reads"],
      d["served"]["local_pack"]["reads"], d["cluster"]["peers"]["reads"],
      d["cluster"]["fallback"]["reads"], d["ram_cache"]["evictions"],
      int(d["ram_cache"]["peak_bytes"] > d["ram_cache"]["capacity_bytes"])))')"
  echo "rank $r: READs $reads (RAM $ram_reqs, packs $pack_reqs), peer reads $peer_reads," \
    "fallback reads $fallback, evictions $evictions; readers got bytes from ${issued[r]} reads"
  [[ $ram_reqs -gt 0 ]] && pass "rank $r: $ram_reqs READs answered from the RAM cache" \
    || fail "rank $r: no READ answered from the RAM cache"
  [[ $pack_reqs -gt 0 ]] && pass "rank $r: $pack_reqs READs loaded from packs" \
    || fail "rank $r: no READ loaded from a pack"
  [[ $((ram_reqs + pack_reqs)) -le $reads ]] && pass "rank $r: the READs answered are among the $reads READs received" \
    || fail "rank $r: $((ram_reqs + pack_reqs)) READs answered, only $reads received"
  [[ $peer_reads -gt 0 ]] && pass "rank $r: $peer_reads pack reads answered by the peer" \
    || fail "rank $r: no pack read from the peer"
  [[ $reads -gt 0 && $reads -lt ${issued[r]} ]] \
    && pass "rank $r: $((issued[r] - reads)) of ${issued[r]} reads with bytes never reached the daemon (page cache)" \
    || fail "rank $r: daemon saw $reads READs for ${issued[r]} reads with bytes"
  [[ $evictions -gt 0 && $over -eq 0 ]] && pass "rank $r: the RAM cache evicted and kept to its budget" \
    || fail "rank $r: RAM cache evictions $evictions, over budget $over"
  [[ $fallback -eq 0 ]] || echo "note: rank $r made $fallback reads from the dataset directory"
  # Staged copies were just written, so most of the peer's reads find their
  # bytes in its page cache and are answered without a server thread.
  at_once=$(json "$T/stats$r.json" 'd["cluster"]["network"]["served_at_once"]')
  [[ $at_once -gt 0 ]] && pass "rank $r: $at_once of the peer's reads answered by the receiving thread" \
    || fail "rank $r: no peer read answered by the receiving thread"
done

# --- One file, one read at a time, on a quiet mount: a read after its page
# cache was dropped reaches the daemon, the same read again does not, and
# after another drop it is answered from the daemon's RAM.
big=$(cd "$T/src" && find . -name 'framed-*' -size +900k -printf '%P\n' | sort | head -n 1)
dontneed() {
  $PY -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}
counter() { json "$T/mnt0/.clairfs/stats.json" "$1"; }
dontneed "$T/mnt0/$big"
r0=$(counter 'd["requests"]["read"]')
cmp "$T/src/$big" "$T/mnt0/$big" || fail "$big differs (cold read)"
r1=$(counter 'd["requests"]["read"]')
cmp "$T/src/$big" "$T/mnt0/$big" || fail "$big differs (warm read)"
r2=$(counter 'd["requests"]["read"]')
dontneed "$T/mnt0/$big"
m2=$(counter 'd["served"]["ram_cache"]["reads"]')
cmp "$T/src/$big" "$T/mnt0/$big" || fail "$big differs (read from RAM)"
r3=$(counter 'd["requests"]["read"]')
m3=$(counter 'd["served"]["ram_cache"]["reads"]')
[[ $r1 -gt $r0 ]] && pass "$big after a drop: $((r1 - r0)) READs" || fail "$big after a drop: no READ"
[[ $r2 -eq $r1 ]] && pass "$big again: no READ (page cache)" || fail "$big again: $((r2 - r1)) READs"
[[ $r3 -gt $r2 && $((m3 - m2)) -eq $((r3 - r2)) ]] \
  && pass "$big after another drop: $((r3 - r2)) READs, all from the RAM cache" \
  || fail "$big after another drop: $((r3 - r2)) READs, $((m3 - m2)) from the RAM cache"

# --- Clean logs and a clean stop.
grep -i "error" "$T/log" >"$T/errors" && { fail "errors in the daemons' log"; head "$T/errors"; } \
  || pass "no error in the daemons' log"
kill -TERM "$launcher"; wait "$launcher"; rc=$?; launcher=""
[[ $rc -eq 0 ]] && pass "SIGTERM: both ranks exited 0" || { fail "exit code $rc after SIGTERM"; tail "$T/log"; }
grep -i "error" "$T/log" >"$T/errors" && { fail "errors in the log at stop"; head "$T/errors"; } \
  || pass "no error logged at stop"
[[ $(grep -c "unmounted $T/mnt" "$T/log") -eq 2 ]] && pass "both ranks logged their unmount" \
  || fail "a rank did not log its unmount"
grep -q "$T/mnt" /proc/mounts && fail "mounts left behind" || pass "no mount left behind"

echo "$failures failures"
[[ $failures -eq 0 ]]
