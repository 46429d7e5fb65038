#!/usr/bin/env bash
# clairfs-doctor on this node: passes when the node is healthy, and each
# check fails with its message and exit 1 when its cause is made true -
# as an unprivileged user (created here) in a private mount namespace whose
# /dev/fuse and /etc/fuse.conf are the test's own copies (the real ones are
# never touched), with fusermount3 off PATH, a fake /proc for inotify and
# memory, a tiny tmpfs as the local dir, a manifest with a flipped byte, a
# malformed config and an Open MPI mpiexec first on PATH. Needs root.
set -uo pipefail
BIN=${CLAIRFS_BIN:?CLAIRFS_BIN must point at the build bin directory}
skip() {  # in CI the packages are installed by setup.sh: a skip there is a failure
  if [[ ${CI:-} == true ]]; then echo "FAIL (CI must not skip): $*"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[[ $(id -u) == 0 ]] || skip "needs root (a test user, mount namespaces, tmpfs)"
for t in useradd userdel unshare setpriv mknod python3 fusermount3; do
  command -v "$t" >/dev/null || skip "$t is missing"
done
[[ -e /etc/fuse.conf ]] || skip "/etc/fuse.conf is missing (fuse3 installs it)"

failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
T=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-doctor.XXXXXX")
chmod 755 "$T"
USER_NAME=cfsdoc$$
TMPFS=""
cleanup() {
  [[ -n $TMPFS ]] && umount "$TMPFS" 2>/dev/null
  id "$USER_NAME" >/dev/null 2>&1 && userdel "$USER_NAME" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
useradd -M -r -d "$T" -s /usr/sbin/nologin "$USER_NAME" || { echo "FAIL useradd"; exit 1; }
uid=$(id -u "$USER_NAME") gid=$(id -g "$USER_NAME")

# The doctor where the test user may run it (the build tree may be private).
mkdir -p "$T/bin" "$T/tools" "$T/fake" "$T/ns"
cp "$BIN/clairfs-doctor" "$T/bin/"
DOCTOR=$T/bin/clairfs-doctor
ln -s "$(command -v fusermount3)" "$T/tools/fusermount3"
# A PATH with nothing but fusermount3: no mpiexec.mpich to prefer.
cat >"$T/fake/mpiexec" <<'SH'
#!/bin/sh
echo "mpiexec (OpenRTE) 4.1.4"
echo
echo "Report bugs to http://www.open-mpi.org/community/help/"
SH
chmod 755 "$T/fake/mpiexec"

# A small dataset: a few directories and one 3 MiB file that does not compress.
mkdir -p "$T/src/a/b" "$T/src/c"
for i in 1 2 3; do echo "file $i" >"$T/src/a/f$i.txt"; echo "x$i" >"$T/src/c/g$i"; done
head -c 3M /dev/urandom >"$T/src/a/b/big.bin"
"$BIN/clairfs-partition" pack "$T/src" "$T/data" --partitions 2 >"$T/pack.log" 2>&1 ||
  { cat "$T/pack.log"; echo "FAIL pack"; exit 1; }
printf 'ram_cache: 64M\n' >"$T/good.yaml"
printf 'ram_cache: 64M\nallow_other: true\n' >"$T/other.yaml"
printf 'ram_cache: lots\nno_such_key: 1\n' >"$T/bad.yaml"
printf 'ram_cache: 64M\nprefetch_opens: fuse\n' >"$T/fuse.yaml"
printf '# mount_max = 1000\n' >"$T/fuse-deny.conf"
printf 'user_allow_other\n' >"$T/fuse-allow.conf"
chmod -R a+rX "$T"
mkdir -p "$T/local"

# A fake /proc: the real meminfo and inotify limits, changed one at a time.
fake_proc() {  # DIR MEMAVAILABLE_KB WATCHES QUEUE
  mkdir -p "$1/sys/fs/inotify"
  sed "s/^MemAvailable:.*/MemAvailable:   $2 kB/" /proc/meminfo >"$1/meminfo"
  echo "$3" >"$1/sys/fs/inotify/max_user_watches"
  echo "$4" >"$1/sys/fs/inotify/max_queued_events"
}
fake_proc "$T/proc-ok" 8388608 524288 16384
fake_proc "$T/proc-watches" 8388608 100 16384
fake_proc "$T/proc-queue" 8388608 524288 16
fake_proc "$T/proc-mem" 1000 524288 16384

# expect CODE NAME=PATTERN... -- COMMAND...: the exit code, and for each
# NAME the line of that check in the output matches PATTERN (grep -E).
expect() {
  local code=$1 checks=()
  shift
  while [[ $1 != -- ]]; do checks+=("$1"); shift; done
  shift
  local out rc c name line ok=1
  out=$("$@" 2>"$T/stderr")
  rc=$?
  [[ $rc == "$code" ]] || ok=0
  for c in "${checks[@]}"; do
    name=${c%%=*}
    line=$(grep -E "^(ok|PROBLEM|skipped) +$name: " <<<"$out")
    grep -qE "${c#*=}" <<<"$line" || ok=0
    ((ok)) && pass "$name: exit $rc, $line"
  done
  if ((!ok)); then
    fail "wanted exit $code and ${checks[*]}, got exit $rc:"
    printf '%s\n' "$out" | sed 's/^/     /'
    sed 's/^/     stderr: /' "$T/stderr"
  fi
}
# as_user DEVMODE FUSECONF COMMAND...: COMMAND as the test user, in a mount
# namespace of its own where /dev/fuse is a device node of mode DEVMODE and
# /etc/fuse.conf is FUSECONF.
as_user() {
  local mode=$1 conf=$2
  shift 2
  unshare -m --propagation private bash -c '
    set -e
    mount -t tmpfs -o size=64k,mode=755 none "$1"
    mknod "$1/fuse" c 10 229
    chmod "$2" "$1/fuse"
    mount --bind "$1/fuse" /dev/fuse
    mount --bind "$3" /etc/fuse.conf
    uid=$4 gid=$5
    shift 5
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"' \
    ns "$T/ns" "$mode" "$conf" "$uid" "$gid" "$@"
}
common=(--dataset "$T/data" --local-dir "$T/local" --config "$T/good.yaml")

# --- the healthy node, as root: every check ok, none skipped, exit 0.
out=$("$DOCTOR" "${common[@]}" 2>&1)
rc=$?
if [[ $rc == 0 ]] && [[ $(grep -c '^ok ' <<<"$out") == 10 ]]; then
  pass "healthy as root: exit 0, 10 checks ok"
else
  fail "healthy as root: exit $rc"
  printf '%s\n' "$out" | sed 's/^/     /'
fi
json=$("$DOCTOR" "${common[@]}" --json)
python3 - "$json" <<'PY' && pass "--json: ok true, 10 checks with name/state/ok/message/fix" || fail "--json: $json"
import json, sys
d = json.loads(sys.argv[1])
assert d["ok"] is True and len(d["checks"]) == 10, d
for c in d["checks"]:
    assert set(c) == {"name", "state", "ok", "message", "fix"}, c
    assert c["ok"] and c["state"] == "ok", c
PY

# --- the healthy node, as a user: /dev/fuse open to all, fusermount3 mounts.
expect 0 "fuse_protocol=^ok .*mounting works; the kernel speaks FUSE 7\.[0-9]+" \
  "dev_fuse=^ok .*/dev/fuse opens read-write for uid $uid" \
  "fusermount3=^ok .*fusermount3 is setuid root" -- \
  as_user 666 "$T/fuse-deny.conf" env PATH="$T/tools:$PATH" "$DOCTOR" "${common[@]}"

# --- 1. /dev/fuse not for this user (mode 0600, root's).
# ... and so no mount either: the trial mount says what fusermount3 said.
expect 1 "dev_fuse=^PROBLEM dev_fuse: /dev/fuse is not readable and writable by uid $uid \(mode 0600" \
  "fuse_protocol=^PROBLEM fuse_protocol: a trial mount failed: mounting FUSE on .* failed: .*(/dev/fuse|Permission denied)" -- \
  as_user 600 "$T/fuse-deny.conf" env PATH="$T/tools:$PATH" "$DOCTOR" "${common[@]}"

# --- 2. fusermount3 not on the user's PATH (root needs none).
expect 1 "fusermount3=^PROBLEM fusermount3: fusermount3 is not on PATH" -- \
  as_user 666 "$T/fuse-deny.conf" env PATH="$T/fake" "$DOCTOR" "${common[@]}"
# (exit 1 all the same: that PATH has only an Open MPI mpiexec.)
expect 1 "fusermount3=^ok .*not needed: root mounts without it" -- \
  env PATH="$T/fake" "$DOCTOR" "${common[@]}"

# --- 3. allow_other asked for by the config, refused by fuse.conf.
expect 1 "allow_other=^PROBLEM allow_other: asked for \(allow_other: true in $T/other.yaml\), but /etc/fuse.conf has no line user_allow_other" -- \
  as_user 666 "$T/fuse-deny.conf" env PATH="$T/tools:$PATH" "$DOCTOR" "${common[@]}" --config "$T/other.yaml"
expect 0 "allow_other=^ok .*and /etc/fuse.conf has user_allow_other" -- \
  as_user 666 "$T/fuse-allow.conf" env PATH="$T/tools:$PATH" "$DOCTOR" "${common[@]}" --config "$T/other.yaml"
expect 1 "allow_other=^PROBLEM allow_other: asked for \(--allow-other\)" -- \
  as_user 666 "$T/fuse-deny.conf" env PATH="$T/tools:$PATH" "$DOCTOR" "${common[@]}" --allow-other

# --- 5. inotify limits below the dataset's directories / a burst of opens.
expect 0 "inotify=^ok +inotify: 3 directories to watch" -- "$DOCTOR" "${common[@]}" --proc "$T/proc-ok"
expect 1 "inotify=^PROBLEM inotify: max_user_watches is 100 \($T/proc-watches/sys/fs/inotify/max_user_watches\)" -- \
  "$DOCTOR" "${common[@]}" --proc "$T/proc-watches"
expect 1 "inotify=^PROBLEM inotify: max_queued_events is 16 " -- \
  "$DOCTOR" "${common[@]}" --proc "$T/proc-queue"
expect 0 "inotify=^ok +inotify: not used \(prefetch_opens: fuse\)" -- \
  "$DOCTOR" "${common[@]}" --proc "$T/proc-watches" --config "$T/fuse.yaml"

# --- 6. the local dir on a 1 MiB tmpfs; the packs need 3 MiB.
TMPFS=$T/tiny
mkdir -p "$TMPFS"
mount -t tmpfs -o size=1M none "$TMPFS"
expect 1 "local_space=^PROBLEM local_space: not enough space: node 0 of 1 \(default\) stages 3 packs, the one node holds every pack: 3.0 MiB to copy, .* free in $TMPFS" -- \
  "$DOCTOR" "${common[@]}" --local-dir "$TMPFS/packs"
# Two nodes share the packs: node 1 holds partition 1 and the broadcast pack.
expect 0 "local_space=^ok +local_space: node 1 of 2 \(--nodes\) stages 2 packs, partition p on node p mod 2" -- \
  "$DOCTOR" "${common[@]}" --nodes 2 --rank 1
umount "$TMPFS" && TMPFS=""

# --- 7. memory: MemAvailable below ram_cache.
expect 1 "memory=^PROBLEM memory: not enough memory: MemAvailable 1000.0 KiB, the daemon needs" -- \
  "$DOCTOR" "${common[@]}" --proc "$T/proc-mem"

# --- 8. an Open MPI mpiexec first on PATH.
expect 1 "mpi=^PROBLEM mpi: mpiexec does not match the MPI clairfs was built with: .*$T/fake/mpiexec is Open MPI's" -- \
  env PATH="$T/fake:$T/tools" "$DOCTOR" "${common[@]}"

# --- 9. the manifest: a flipped byte, a missing pack, a damaged pack.
cp -r "$T/data" "$T/flipped"
python3 - "$T/flipped/manifest" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x40
open(p, "wb").write(b)
PY
expect 1 "manifest=^PROBLEM manifest: corrupt: $T/flipped/manifest" -- \
  "$DOCTOR" "${common[@]}" --dataset "$T/flipped"
expect 1 "manifest=^PROBLEM manifest: dataset $T/nowhere is not visible" -- \
  "$DOCTOR" "${common[@]}" --dataset "$T/nowhere"
cp -r "$T/data" "$T/missing"
rm "$T/missing/part-00001"
expect 1 "manifest=^PROBLEM manifest: .*a pack is missing or damaged: .*part-00001" -- \
  "$DOCTOR" "${common[@]}" --dataset "$T/missing"
cp -r "$T/data" "$T/damaged"
python3 - "$T/damaged" <<'PY'
import os, sys
d = sys.argv[1]
p = max((os.path.join(d, f) for f in os.listdir(d) if f.startswith("part-")), key=os.path.getsize)
b = bytearray(open(p, "rb").read())
b[-100] ^= 0x01
open(p, "wb").write(b)
PY
expect 0 "manifest=^ok +manifest: .*each pack present" -- "$DOCTOR" "${common[@]}" --dataset "$T/damaged"
expect 1 "manifest=^PROBLEM manifest: .*a pack is missing or damaged: .*part-0000" -- \
  "$DOCTOR" "${common[@]}" --dataset "$T/damaged" --verify-packs
expect 0 "manifest=^ok +manifest: .*every pack's checksum verified" -- \
  "$DOCTOR" "${common[@]}" --verify-packs

# --- 10. a malformed config.
# The checks of the config's values are skipped; the others go on.
expect 1 "config=^PROBLEM config: clairfsd would refuse its configuration: .*ram_cache.*no_such_key" \
  "memory=^skipped memory: the config did not load" "manifest=^ok " -- \
  "$DOCTOR" "${common[@]}" --config "$T/bad.yaml"

# --- what was not given is skipped, not passed; bad usage is exit 2.
expect 0 "manifest=^skipped manifest: no --dataset" -- "$DOCTOR"
expect 0 "local_space=^skipped local_space: no --local-dir" -- "$DOCTOR" --dataset "$T/data"
"$DOCTOR" --nodes x >/dev/null 2>&1
[[ $? == 2 ]] && pass "usage error: exit 2" || fail "--nodes x: not exit 2"
"$DOCTOR" --nodes 2 --rank 2 >/dev/null 2>&1
[[ $? == 2 ]] && pass "rank past the nodes: exit 2" || fail "--rank 2 of 2: not exit 2"

((failures == 0)) && echo "doctor_test: all passed" || echo "doctor_test: $failures failed"
exit $((failures > 0))
