#!/usr/bin/env bash
# `cmake --install` without root (docs/install.md): a fresh user installs the
# build into a prefix of its own, moves the tree elsewhere (it is
# relocatable), and from there every installed binary answers --version, the
# shared libraries resolve, clairfs-run serves a dataset on one node (its
# order reporter found in the installed layout) and clairfsd serves one on 2
# MPI ranks. Nothing of the build tree is on the user's PATH.
set -uo pipefail
source "$CLAIRFS_SRC/tests/install/user_lib.sh" install
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec) || need "mpiexec missing"
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
t0=$SECONDS

if as_user cmake --install "$BUILD" --prefix "$H/staged" >"$H/install.log" 2>&1 &&
  as_user mv "$H/staged" "$H/clairfs"; then
  pass "cmake --install as $U into a prefix of its own, then moved"
else
  fail "cmake --install"
  cat "$H/install.log"
  exit 1
fi
P=$H/clairfs

# --- the layout docs/install.md lists.
want=(bin/clairfsd bin/clairfs-partition bin/clairfs-order bin/clairfs-wait bin/clairfs-bench
      bin/clairfs-doctor
      bin/clairfs-run bin/clairfs-summary share/clairfs/report/sitecustomize.py
      share/clairfs/report/clairfs_report/__init__.py share/clairfs/python/clairfs_order_file.py
      share/clairfs/slurm/clairfs-job.sbatch share/doc/clairfs/install.md share/doc/clairfs/README.md)
missing=()
for f in "${want[@]}"; do [[ -e $P/$f ]] || missing+=("$f"); done
((${#missing[@]} == 0)) && pass "installed: ${want[*]}" || fail "missing from the install: ${missing[*]}"
[[ ! -e $P/bin/clairfs-manifest-bench ]] && pass "the developer's benchmark is not installed" ||
  fail "clairfs-manifest-bench installed"

# --- every installed binary: --version, its libraries, no path into the build.
version=$(sed -n 's/^project(clairfs VERSION \([0-9.]*\).*/\1/p' "$CLAIRFS_SRC/CMakeLists.txt")
binaries=0
for b in "$P"/bin/*; do
  head -c 4 "$b" | grep -q ELF || continue
  binaries=$((binaries + 1))
  name=$(basename "$b")
  out=$(as_user "$b" --version 2>&1)
  if [[ $? -eq 0 && $(head -n 1 <<<"$out") =~ ^$name\ $version\ \(commit\ [0-9a-f+a-z]+\)$ ]] &&
    grep -q "^build: .*sanitizers .*, fuzz o" <<<"$out" && grep -q "^mpi: MPICH" <<<"$out" &&
    grep -q "^libfuse 3\.[0-9.]*, zstd [0-9.]*" <<<"$out"; then
    :
  else
    fail "$name --version: $out"
  fi
  ldd "$b" | grep -q "not found" && fail "$name: $(ldd "$b" | grep 'not found')"
  readelf -d "$b" | grep -E 'R(UN)?PATH' | grep -q "$BUILD" && fail "$name: RPATH into the build tree"
done
# Every binary installed (clairfs_executable without INTERNAL), not a list
# kept here: a new tool is checked the day it is added.
((binaries >= 6)) && pass "$binaries binaries: --version (version, commit, build options, MPI, libfuse, zstd), libraries found, no RPATH into the build" ||
  fail "$binaries installed binaries, want at least 6"
out=$(as_user "$P/bin/clairfs-run" --version 2>&1)
[[ $(head -n 1 <<<"$out") == "clairfs-run $version "* ]] && grep -qx "binaries: $P/bin" <<<"$out" &&
  pass "clairfs-run --version: the clairfsd beside it" || fail "clairfs-run --version: $out"
out=$(as_user "$P/bin/clairfs-summary" --version 2>&1)
[[ $(head -n 1 <<<"$out") == "clairfs-summary $version "* ]] && grep -q "^mpi: MPICH" <<<"$out" &&
  pass "clairfs-summary --version: the clairfsd beside it" || fail "clairfs-summary --version: $out"

# --- a tiny dataset, packed with the installed clairfs-partition.
as_user /usr/bin/python3 "$CLAIRFS_SRC/tests/partitioner/make_tree.py" "$H/src" --small 60 --no-links >/dev/null &&
  as_user "$P/bin/clairfs-partition" pack "$H/src" "$H/packed" --partitions 2 >/dev/null 2>&1 &&
  pass "packed with the installed clairfs-partition" || { fail "pack"; exit 1; }

# --- one node: the installed clairfs-run, the dataset read back whole, the
# reporter put on the command's PYTHONPATH from share/clairfs/report.
as_user env PATH="$P/bin:/usr/bin:/bin" "$P/bin/clairfs-run" --dataset "$H/packed" --mount "$H/mnt" \
  --logs "$H/logs1" -- sh -c "diff -r '$H/src' '$H/mnt' && python3 -c 'import sitecustomize; print(sitecustomize.__file__)'" \
  >"$H/run1.out" 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -qx "$P/share/clairfs/report/sitecustomize.py" "$H/run1.out" &&
  [[ -s $H/logs1/stats-$(hostname).json ]]; then
  pass "1 node through the installed clairfs-run: diff -r clean, the reporter from share/clairfs/report, stats saved"
else
  fail "1 node through clairfs-run (exit $rc)"
  cat "$H/run1.out"
fi

# --- two ranks: the installed clairfsd under mpiexec, each with its own
# mount and local directory; rank 1's mount reads the whole dataset.
as_user bash -c "'$MPIEXEC' -n 2 '$P/bin/clairfsd' --dataset '$H/packed' --mount '$H/mnt{rank}' \
  --local-dir '$H/ssd{rank}' >'$H/ranks.log' 2>&1 & echo \$! >'$H/ranks.pid'; wait"&
sleep 0.5
if as_user "$P/bin/clairfs-wait" "$H/mnt0" "$H/mnt1" --timeout 60 >/dev/null 2>&1 &&
  as_user diff -r "$H/src" "$H/mnt1" >/dev/null && as_user diff -r "$H/src" "$H/mnt0" >/dev/null; then
  pass "2 ranks of the installed clairfsd (mpiexec -n 2): both mounts read whole"
else
  fail "2 ranks"
  cat "$H/ranks.log"
fi
kill -TERM "$(cat "$H/ranks.pid")" 2>/dev/null
wait
for m in "$H/mnt0" "$H/mnt1"; do
  grep -q " $m " /proc/mounts && fail "$m still mounted after the ranks stopped"
done

echo "install test: $((SECONDS - t0)) s"
((failures == 0)) || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
