# Sourced by the tests that launch clairfsd ranks: skips (exit 77) where MPI
# or FUSE is missing, sets MPIEXEC and a temporary directory T, and on exit
# stops the launcher started as $launcher and lazily unmounts $T/mnt*.
# usage: source ranks_lib.sh NAME
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec) || { echo "SKIP: no mpiexec"; exit 77; }
[[ -c /dev/fuse ]] && command -v fusermount3 >/dev/null || { echo "SKIP: /dev/fuse or fusermount3 missing"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-$1.XXXXXX")
launcher=""
cleanup() {
  [[ -n $launcher ]] && kill -TERM "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
  for m in "$T"/mnt*; do mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"; done
  [[ -n ${KEEP:-} ]] || rm -rf "$T"
}
trap cleanup EXIT
