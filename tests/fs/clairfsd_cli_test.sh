#!/bin/bash
# clairfsd's command line without mounting: --help, every configuration error
# reported at once (exit 2), a missing dataset (exit 1).
set -euo pipefail
BIN=${CLAIRFS_BIN:?}
[ -x "$BIN/clairfsd" ] || { echo "SKIP: $BIN/clairfsd is not built"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clairfsd-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The help is taken whole first: `grep -q` in a pipe stops reading at its
# match, and a help longer than the pipe's stdio buffer then ends in SIGPIPE,
# which pipefail reports as a failure.
help=$("$BIN/clairfsd" --help) || fail "--help exits $?"
grep -q -- "--ram-cache" <<<"$help" || fail "--help does not list --ram-cache"

cat >"$WORK/bad.yaml" <<'YAML'
dataset: /nowhere
ram_cache: lots
thread: 4
clone_fd: maybe
YAML
rc=0
"$BIN/clairfsd" --config "$WORK/bad.yaml" --log-level chatty --bogus 1 2>"$WORK/err" || rc=$?
[ "$rc" = 2 ] || fail "exit status $rc for a bad config, expected 2"
for want in "bad.yaml:2: ram_cache: bad value" "bad.yaml:3: thread: unknown key" \
            "bad.yaml:4: clone_fd: bad value" "--log_level: bad value" "--bogus: unknown key" \
            "mount: required"; do
  grep -qF -- "$want" "$WORK/err" || { cat "$WORK/err"; fail "missing error: $want"; }
done
grep -q '^clairfsd: ' "$WORK/err" || fail "errors are not prefixed with clairfsd:"

mkdir -p "$WORK/mnt" "$WORK/empty"
rc=0
"$BIN/clairfsd" --dataset "$WORK/empty" --mount "$WORK/mnt" 2>"$WORK/err2" || rc=$?
[ "$rc" = 1 ] || fail "exit status $rc for a directory without manifest, expected 1"
grep -q "no manifest" "$WORK/err2" || { cat "$WORK/err2"; fail "no 'no manifest' message"; }
grep -q "clairfsd: config: ram_cache: 1073741824" "$WORK/err2" || fail "effective config not logged"

rc=0
touch "$WORK/a-file"
"$BIN/clairfsd" --dataset "$WORK/empty" --mount "$WORK/a-file" 2>"$WORK/err3" || rc=$?
[ "$rc" = 2 ] || fail "exit status $rc for a mount point that is a file, expected 2"
grep -q "is not a directory" "$WORK/err3" || fail "mount point that is a file: no clear message"

# Paths that are the wrong kind of thing are named as such (exit 2 before mounting).
expect() {  # expect RC PATTERN ARGS...: clairfsd exits RC and says PATTERN
  local want=$1 pattern=$2 got=0
  shift 2
  "$BIN/clairfsd" "$@" 2>"$WORK/err4" || got=$?
  [ "$got" = "$want" ] && grep -q -- "$pattern" "$WORK/err4" \
    || { cat "$WORK/err4"; fail "clairfsd $*: exit $got (want $want), message '$pattern'"; }
}
expect 2 "dataset: .*a-file is not a directory (give the clairfs-partition output" \
  --dataset "$WORK/a-file" --mount "$WORK/m5"
expect 2 "dataset: .*/gone does not exist on host" --dataset "$WORK/gone" --mount "$WORK/m6"
mkdir -p "$WORK/dirmanifest/manifest"
expect 1 "dirmanifest/manifest is a directory, not a file" --dataset "$WORK/dirmanifest" --mount "$WORK/m7"
grep -q "IOError: IOError" "$WORK/err4" && fail "doubled error prefix"
mkdir -p "$WORK/full" && echo keep >"$WORK/full/x"
expect 2 "full is not empty" --dataset "$WORK/empty" --mount "$WORK/full"
expect 2 "cannot be created" --dataset "$WORK/empty" --mount "$WORK/a-file/sub"
echo PASS
