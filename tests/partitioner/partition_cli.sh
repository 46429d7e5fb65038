#!/usr/bin/env bash
# clairfs-partition end to end on a tricky generated tree: pack, verify,
# inspect, and every kind of bad input the CLI must name clearly.
set -uo pipefail
P="$CLAIRFS_BIN/clairfs-partition"
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-cli.XXXXXX")
cg=""
cleanup() {
  mountpoint -q "$T/small" 2>/dev/null && umount "$T/small"
  [[ -n $cg ]] && rmdir "$cg" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
# expect_fail NAME PATTERN CMD...: CMD must exit non-zero and print PATTERN.
expect_fail() {
  local name=$1 pattern=$2; shift 2
  local out; out=$("$@" 2>&1) && { fail "$name: succeeded"; echo "$out"; return; }
  grep -q -- "$pattern" <<<"$out" && pass "$name" || { fail "$name: no '$pattern' in:"; echo "$out"; }
}

$PY "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$T/src" --small 10000 || exit 1
mkfifo "$T/src/odd/fifo"
nfiles=$(find -L "$T/src" -type f -printf x | wc -c)  # links inside SRC count as files

# Pack, with a broadcast glob, small frames so many files are framed.
out=$("$P" pack "$T/src" "$T/out" --partitions 8 --broadcast 'unicode/*' --frame-size 65536 \
      --threads 3 2>"$T/pack.err") || { fail "pack"; cat "$T/pack.err"; }
grep -q "packed $nfiles files" <<<"$out" && pass "pack summary" || fail "pack summary: $out"
grep -q "odd/fifo: not a regular file" "$T/pack.err" && pass "fifo skipped with a warning" \
  || fail "fifo warning missing"
grep -q 'odd/new\\x0aline' "$T/pack.err" && pass "newline name warned" || fail "newline warning"
[[ -f "$T/out/manifest" && -f "$T/out/part-00007" && -f "$T/out/part-bcast" ]] \
  && pass "output files" || fail "output files: $(ls "$T/out")"

"$P" verify "$T/out" "$T/src" >"$T/verify.out" 2>&1 && grep -q "identical" "$T/verify.out" \
  && pass "verify identical" || { fail "verify"; cat "$T/verify.out"; }

"$P" inspect "$T/out" --json >"$T/inspect.json" || fail "inspect --json"
$PY - "$T/inspect.json" "$nfiles" <<'PYEOF' && pass "inspect --json" || fail "inspect --json content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["files"] == int(sys.argv[2]), j["files"]
assert j["broadcast_files"] == 3, j["broadcast_files"]
assert j["partition_count"] == 8 and len(j["partitions"]) == 9
assert sum(p["files"] for p in j["partitions"]) == j["files"]
assert j["codecs"]["framed"] >= 2 and j["codecs"]["zstd"] > 0 and j["codecs"]["raw"] > 0
assert j["raw_bytes"] > j["stored_bytes"] > 0
assert j["balance_max_over_mean"] < 1.5, j["balance_max_over_mean"]
assert j["largest"][0]["size"] >= j["largest"][1]["size"]
PYEOF
inspect_text=$("$P" inspect "$T/out")  # whole: grep -q in a pipe can end it in SIGPIPE
grep -q "largest files" <<<"$inspect_text" && pass "inspect text" || fail "inspect text"

# The other placements and no compression also round trip.
for pl in hash contiguous; do
  "$P" pack "$T/src" "$T/out-$pl" --partitions 3 --placement $pl --compress none >/dev/null 2>&1 \
    && "$P" verify "$T/out-$pl" "$T/src" >/dev/null 2>&1 && pass "placement $pl round trip" \
    || fail "placement $pl"
done

# verify names every difference.
cp -a "$T/src" "$T/src2" 2>/dev/null
rm "$T/src2/odd/fifo"
printf 'X' | dd of="$T/src2/train/class_001/img_00001.jpg" bs=1 seek=0 conv=notrunc 2>/dev/null
touch -d @0 "$T/src2/train/class_001/img_00001.jpg"
echo extra >"$T/src2/extra-file"
rm "$T/src2/train/class_002/img_00002.jpg"
"$P" verify "$T/out" "$T/src2" >"$T/v2.out" 2>&1; rc=$?
[[ $rc -eq 1 ]] && pass "verify exit 1 on differences" || fail "verify exit $rc"
for pat in "extra-file: in the source but not in the pack" \
           "class_002/img_00002.jpg: in the pack but not in the source" \
           "class_001/img_00001.jpg: mtime differs"; do
  grep -q "$pat" "$T/v2.out" && pass "verify names: $pat" || { fail "verify missing: $pat"; cat "$T/v2.out"; }
done

# A flipped byte in a pack is Corruption naming file and partition, never wrong bytes.
cp -a "$T/out" "$T/bad"
size=$(stat -c %s "$T/bad/part-00003")
printf '\xff' | dd of="$T/bad/part-00003" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$P" verify "$T/bad" "$T/src" >"$T/v3.out" 2>&1; rc=$?
[[ $rc -eq 1 ]] && grep -q "part-00003: pack checksum mismatch" "$T/v3.out" \
  && grep -q "Corruption: .* in part-00003" "$T/v3.out" && pass "corrupt pack named" \
  || { fail "corrupt pack ($rc)"; cat "$T/v3.out"; }
cp "$T/out/manifest" "$T/bad/manifest"
printf '\x00' | dd of="$T/bad/manifest" bs=1 seek=300 conv=notrunc 2>/dev/null
expect_fail "corrupt manifest" "Corruption: .*manifest.*checksum mismatch" "$P" inspect "$T/bad"
rm "$T/bad/part-00005"; cp "$T/out/manifest" "$T/bad/manifest"
"$P" verify "$T/bad" "$T/src" >"$T/v4.out" 2>&1
grep -q "part-00005: partition 5 pack is missing" "$T/v4.out" && pass "missing pack named" \
  || { fail "missing pack"; cat "$T/v4.out"; }

# Refusals.
expect_fail "OUT exists" "exists; pass --force" "$P" pack "$T/src" "$T/out" --partitions 2
"$P" pack "$T/src" "$T/out" --partitions 2 --force >/dev/null 2>&1 && \
  "$P" verify "$T/out" "$T/src" >/dev/null 2>&1 && [[ ! -e "$T/out/part-00007" ]] \
  && pass "--force replaces, stale packs removed" || fail "--force"
mkdir "$T/foreign"; touch "$T/foreign/notes.txt"
expect_fail "--force keeps foreign files" "refusing to replace" \
  "$P" pack "$T/src" "$T/foreign" --partitions 2 --force
expect_fail "OUT = SRC" "same directory as SRC" "$P" pack "$T/src" "$T/src/" --partitions 1
expect_fail "OUT inside SRC" "is inside SRC" "$P" pack "$T/src" "$T/src/sub/out" --partitions 1
[[ ! -e "$T/src/sub" ]] && pass "nothing written into SRC" || fail "wrote into SRC"
mkdir -p "$T/links/d"; echo hi >"$T/links/d/f"
ln -s /etc/hostname "$T/links/escape"; ln -s .. "$T/links/d/up"; ln -s missing "$T/links/dangling"
"$P" pack "$T/links" "$T/out-links" --partitions 1 >"$T/links.out" 2>&1; rc=$?
[[ $rc -eq 1 ]] && grep -q "escape: symlink escapes" "$T/links.out" \
  && grep -q "d/up: symlink loops" "$T/links.out" && grep -q "dangling: symlink is broken" "$T/links.out" \
  && [[ ! -e "$T/out-links" ]] && pass "bad links all named, nothing written" \
  || { fail "bad links ($rc)"; cat "$T/links.out"; }
rm "$T/links/d/up"
"$P" pack "$T/links" "$T/out-skip" --partitions 1 --external-links skip >/dev/null 2>"$T/skip.err" \
  && grep -q "escape: symlink to /etc/hostname outside the source tree skipped" "$T/skip.err" \
  && grep -q "dangling: broken symlink skipped" "$T/skip.err" \
  && "$P" verify "$T/out-skip" "$T/links" --external-links skip >/dev/null \
  && pass "--external-links skip" || { fail "--external-links skip"; cat "$T/skip.err"; }
expect_fail "--external-links follow still refuses a broken link" "dangling: symlink is broken" \
  "$P" pack "$T/links" "$T/out-follow" --partitions 1 --external-links follow
rm "$T/links/dangling"
"$P" pack "$T/links" "$T/out-follow" --partitions 1 --external-links follow >/dev/null 2>&1 \
  && "$P" verify "$T/out-follow" "$T/links" --external-links follow >/dev/null \
  && pass "--external-links follow stores the target" || fail "--external-links follow"
expect_fail "bad --compress" "bad --compress" "$P" pack "$T/src" "$T/o" --partitions 1 --compress lz4
expect_fail "bad level" "bad zstd level" "$P" pack "$T/src" "$T/o" --partitions 1 --compress zstd:99
expect_fail "no --partitions" "partitions P is required" "$P" pack "$T/src" "$T/o"
expect_fail "bad placement" "unknown placement" "$P" pack "$T/src" "$T/o" --partitions 1 --placement x
expect_fail "no manifest" "no manifest" "$P" inspect "$T/src"

# Symlinks inside SRC store the target's content.
cmp -s <("$P" verify "$T/out" "$T/src" | tail -1 | grep -o identical) <(echo identical) \
  && pass "links inside SRC followed" || fail "links"

# Out-of-range options are usage errors (exit 2) naming the option, before anything is read.
usage_case() {  # usage_case PATTERN ARGS...: `pack SRC OUT ARGS` exits 2 and prints PATTERN
  local pattern=$1 rc=0 out
  shift
  out=$("$P" pack "$T/src" "$T/never" "$@" 2>&1) || rc=$?
  [[ $rc -eq 2 ]] && grep -q -- "$pattern" <<<"$out" && pass "usage error: $*" \
    || { fail "pack $*: exit $rc, want 2 and '$pattern'"; echo "$out"; }
}
usage_case "--partitions 100000 is out of range" --partitions 100000
usage_case "--partitions 5000000000 is out of range" --partitions 5000000000
usage_case "--replicas 0 is out of range" --partitions 4 --replicas 0
usage_case "--replicas 9 is out of range" --partitions 4 --replicas 9
usage_case "--frame-size 0 is too small" --partitions 4 --frame-size 0
usage_case "--frame-size 1 is too small" --partitions 4 --frame-size 1
usage_case "unknown placement 'foo'" --partitions 4 --placement foo
usage_case "--threads 0" --partitions 4 --threads 0
usage_case "--threads 100000 is out of range" --partitions 4 --threads 100000
[[ ! -e "$T/never" ]] && pass "nothing written on usage errors" || fail "usage error left $T/never"
mkdir -p "$T/dirpack/manifest"
expect_fail "manifest that is a directory" "manifest is a directory, not a file" "$P" inspect "$T/dirpack"
"$P" inspect "$T/dirpack" 2>&1 | grep -q "IOError: IOError" && fail "doubled error prefix"

# Memory: six 24 MiB files, six threads. With --memory 1M each is packed alone,
# so the process holds one file and its payload (48 MiB) and its buffers, not six.
mkdir -p "$T/big"
for i in 0 1 2 3 4 5; do head -c 24M /dev/urandom >"$T/big/f$i"; done
peak_kib() {  # CMD...: the command's peak resident memory in KiB, -1 when it fails
  $PY -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else -1)' "$@"
}
# Memory figures mean nothing under AddressSanitizer (its shadow and quarantine), which
# also cannot start within a small address-space limit: those checks are for plain builds.
sanitized=0
grep -qa __asan_init "$P" && sanitized=1
low=$(peak_kib "$P" pack "$T/big" "$T/big.out" --partitions 2 --threads 6 --compress none --memory 1M)
high=$(peak_kib "$P" pack "$T/big" "$T/big.out" --partitions 2 --threads 6 --compress none --force)
echo "     peak memory packing 6 x 24 MiB: ${low} KiB with --memory 1M, ${high} KiB with the default"
if ((sanitized)); then
  ((low > 0 && high > 0)) && pass "large files pack" || fail "large files pack"
  echo "skip memory bounds: sanitized build"
else
  ((low > 0 && low < 100 * 1024)) && pass "--memory bounds the files held at once" \
    || fail "--memory 1M: peak ${low} KiB (one file and its payload are 48 MiB)"
fi
"$P" verify "$T/big.out" "$T/big" >/dev/null 2>&1 && pass "large files verify" || fail "large files verify"
# verify compares a chunk at a time: two threads hold 2 x 16 MiB, not 2 x 48 MiB.
vpeak=$(peak_kib "$P" verify "$T/big.out" "$T/big" --threads 2)
if ((!sanitized)); then
  ((vpeak > 0 && vpeak < 80 * 1024)) && pass "verify of large files in bounded memory (${vpeak} KiB)" \
    || fail "verify of 24 MiB files with 2 threads: peak ${vpeak} KiB"
fi
$PY -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(20000000); b = f.read(1)[0]; f.seek(20000000); f.write(bytes([b ^ 0xFF]))' "$T/big/f2"
truncate -s 20M "$T/big/f4"
"$P" verify "$T/big.out" "$T/big" >"$T/v5.out" 2>&1
grep -q "f2: content differs from the source (first at byte 20000000)" "$T/v5.out" \
  && grep -q "f4: size is 25165824 in the pack, 20971520 in the source" "$T/v5.out" \
  && pass "verify names the byte and the size that differ in large files" \
  || { fail "verify of changed large files"; cat "$T/v5.out"; }
expect_fail "--memory junk" "--memory wants a size" "$P" pack "$T/big" "$T/x" --partitions 1 --memory lots
expect_fail "--memory too small" "--memory 1024 is too small" "$P" pack "$T/big" "$T/x" --partitions 1 --memory 1K
# A file that cannot be held at all (address space limited to 300 MiB): a clear error, not a crash.
rm -rf "$T/big" "$T/big.out"
if ((!sanitized)); then
  mkdir -p "$T/huge" && echo small >"$T/huge/a" && truncate -s 1G "$T/huge/sparse"
  expect_fail "file larger than memory" "sparse: 1.0 GiB does not fit in memory" \
    bash -c 'ulimit -v 307200 && exec "$@"' - "$P" pack "$T/huge" "$T/huge.out" --partitions 1
  [[ ! -e "$T/huge.out/manifest" ]] && pass "no manifest after running out of memory" \
    || fail "a manifest was written after running out of memory"
  rm -rf "$T/huge" "$T/huge.out"
fi

# Root only, cgroup v1's memory controller: under a 64 MiB limit a 48 MiB file (about 96 MiB to
# pack) is refused before anything is written; smaller files pack within it.
own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
if ((!sanitized)) && [[ $(id -u) -eq 0 && -n $own && -d /sys/fs/cgroup/memory$own ]] \
   && cg=/sys/fs/cgroup/memory${own%/}/clairfs-cli-$$ && mkdir "$cg" 2>/dev/null \
   && echo $((64 << 20)) >"$cg/memory.limit_in_bytes"; then
  in_cg() { bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' - "$cg" "$@"; }
  mkdir -p "$T/cg" && truncate -s 48M "$T/cg/large" && echo small >"$T/cg/small"
  expect_fail "file larger than the cgroup allows" \
    "large: packing it needs about 96.2 MiB (the file and its payload), more than the 64.0 MiB" \
    in_cg "$P" pack "$T/cg" "$T/cg.out" --partitions 1
  [[ ! -e "$T/cg.out" ]] && pass "nothing written when the cgroup limit refuses" \
    || fail "output left after the cgroup limit refused: $(ls "$T/cg.out")"
  rm "$T/cg/large" && head -c 12M /dev/urandom >"$T/cg/medium"
  in_cg "$P" pack "$T/cg" "$T/cg.out" --partitions 1 >/dev/null 2>"$T/cg.err" \
    && "$P" verify "$T/cg.out" "$T/cg" >/dev/null 2>&1 && pass "packs within a cgroup limit" \
    || { fail "pack within a 64 MiB cgroup"; cat "$T/cg.err"; }
else
  echo "skip cgroup case: needs a plain build, root and cgroup v1's memory controller"
fi

# Root only: a full disk mid-pack, and a file root can read but others cannot.
if [[ $(id -u) -eq 0 ]] && mkdir "$T/small" && mount -t tmpfs -o size=4M tmpfs "$T/small" 2>/dev/null; then
  expect_fail "full disk" "NoSpace: write .*No space left on device" \
    "$P" pack "$T/src" "$T/small/out" --partitions 2
  [[ -z "$(ls -A "$T/small")" ]] && pass "full disk leaves nothing behind" || fail "full disk left: $(ls -R "$T/small")"
  umount "$T/small"
else
  echo "skip full-disk case: needs root to mount a small tmpfs"
fi
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
  mkdir -p "$T/perm/src"; echo secret >"$T/perm/src/locked"; chmod 000 "$T/perm/src/locked"
  echo open >"$T/perm/src/open"; chmod 755 "$T" "$T/perm"; chmod 777 "$T/perm"
  expect_fail "unreadable file" "locked: unreadable" \
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$P" pack "$T/perm/src" "$T/perm/out" --partitions 1
else
  echo "skip unreadable-file case: needs root and setpriv to run as another user"
fi

echo "$failures failures"
[[ $failures -eq 0 ]]
