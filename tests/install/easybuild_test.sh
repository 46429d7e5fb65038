#!/usr/bin/env bash
# EasyBuild + Lmod without root (docs/install.md): the release's source
# tarball (CPack) holds no build output, virtual environment or git data; a
# fresh user builds packaging/easybuild/clairfs-*.eb from it with EasyBuild
# (the pinned venv of scripts/python/venvs.sh, robot off) into a prefix of
# its own with Lmod (Debian's) as the modules tool; `module load clairfs`
# puts the module's tools on PATH, and a training step of the demo's script
# (scripts/train.py, one rank, one epoch of a tiny ImageFolder) reads its
# data through the module's clairfs-run and clairfsd, not the build tree's.
# The EasyBuild build compiles the product again (not its tests): 13 minutes
# on this 2-core machine while two other builds shared it.
set -uo pipefail
source "$CLAIRFS_SRC/tests/install/user_lib.sh" easybuild
EB_VENV=$CLAIRFS_VENVS/easybuild
[[ -x $EB_VENV/bin/eb ]] || need "no EasyBuild venv at $EB_VENV (scripts/setup.sh makes it)"
LMOD_INIT=/usr/share/lmod/lmod/init/bash
[[ -f $LMOD_INIT ]] || need "Lmod missing (apt-get install lmod; scripts/setup.sh installs it)"
as_user test -x "$EB_VENV/bin/eb" || need "$EB_VENV is not readable by other users"
failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
t0=$SECONDS
version=$(sed -n 's/^project(clairfs VERSION \([0-9.]*\).*/\1/p' "$CLAIRFS_SRC/CMakeLists.txt")
eb_file=$CLAIRFS_SRC/packaging/easybuild/clairfs-$version.eb
[[ -f $eb_file ]] && pass "an easyconfig for the project's version $version" ||
  { fail "no $eb_file for the version in CMakeLists.txt"; exit 1; }

# --- the source tarball, made by the user from the build's CPack config.
if as_user cpack --config "$BUILD/CPackSourceConfig.cmake" -B "$H/dist" >"$H/cpack.log" 2>&1 &&
  [[ -f $H/dist/clairfs-$version.tar.gz ]]; then
  pass "cpack: clairfs-$version.tar.gz"
else
  fail "cpack"
  cat "$H/cpack.log"
  exit 1
fi
tar -tzf "$H/dist/clairfs-$version.tar.gz" >"$H/listing"
bad=$(grep -E "^clairfs-$version/(build[^/]*|\.venvs|\.git|demo-work|Testing)(/|$)|__pycache__" "$H/listing" | head -n 3)
top=$(cut -d/ -f1 "$H/listing" | sort -u)
if [[ -z $bad && $top == "clairfs-$version" ]] && grep -qx "clairfs-$version/CMakeLists.txt" "$H/listing" &&
  grep -qx "clairfs-$version/packaging/easybuild/clairfs-$version.eb" "$H/listing"; then
  pass "the tarball: one top directory, the sources, no build directories, venvs or git data ($(wc -l <"$H/listing") entries)"
else
  fail "the tarball holds ${bad:-a wrong top directory: $top}"
fi

# --- eb, as the user, robot off, Lmod. Its own build of the tarball is the
# test that the tarball builds.
eb_args=(--installpath="$H/easybuild" --sourcepath="$H/dist" --buildpath="$H/eb-build"
         --tmpdir="$H/eb-tmp" --repositorypath="$H/eb-repo" --modules-tool=Lmod --module-syntax=Lua
         --max-parallel="$(nproc)" --disable-robot)
if as_user bash -c "source '$LMOD_INIT' && EB_PYTHON='$EB_VENV/bin/python' '$EB_VENV/bin/eb' $(printf "'%s' " "$eb_file" "${eb_args[@]}")" \
  >"$H/eb.log" 2>&1; then
  pass "eb $(basename "$eb_file"): built, sanity-checked and installed into the user's prefix ($((SECONDS - t0)) s so far)"
else
  fail "eb"
  tail -n 40 "$H/eb.log"
  log=$(grep -o '/[^ ]*easybuild-clairfs-[^ ]*\.log' "$H/eb.log" | tail -n 1)
  [[ -n $log && -f $log ]] && tail -n 40 "$log"
  exit 1
fi
module=$H/easybuild/modules/all/clairfs/$version.lua
[[ -f $module ]] && grep -q 'PYTHONPATH' "$module" && pass "the Lmod module $module" || fail "no module $module"

# --- module load, then the demo's training step through the module's tools.
as_user /usr/bin/python3 "$CLAIRFS_SRC/scripts/make_imagefolder.py" "$H/data" --classes 2 --per-class 8 \
  >/dev/null 2>&1 || fail "make_imagefolder"
cat >"$H/job.sh" <<JOB
set -euo pipefail
source '$LMOD_INIT'
module use '$H/easybuild/modules/all'
module load clairfs
echo "clairfsd: \$(command -v clairfsd)"
echo "clairfs-run: \$(command -v clairfs-run)"
clairfsd --version | head -n 1
python3 -c 'import clairfs_order_file, os; print("helper:", os.path.dirname(clairfs_order_file.__file__))'
clairfs-partition pack '$H/data' '$H/packed' --partitions 2 >/dev/null
RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=\$((20000 + \$\$ % 20000)) \
  clairfs-run --dataset '$H/packed' --mount '$H/mnt' --logs '$H/logs' -- \
  python3 '$CLAIRFS_SRC/scripts/train.py' --data '$H/mnt' --epochs 1 --workers 0 --batch-size 4 \
  --image-size 32 --report '$H/report.json'
JOB
chmod 644 "$H/job.sh"
as_user bash "$H/job.sh" >"$H/job.out" 2>&1
rc=$?
prefix=$H/easybuild/software/clairfs/$version
if [[ $rc -eq 0 ]] && grep -qx "clairfsd: $prefix/bin/clairfsd" "$H/job.out" &&
  grep -qx "clairfs-run: $prefix/bin/clairfs-run" "$H/job.out" &&
  grep -qx "helper: $prefix/share/clairfs/python" "$H/job.out" && [[ -s $H/report.json ]] &&
  [[ -s $H/logs/stats-$(hostname).json ]]; then
  pass "module load clairfs: clairfsd, clairfs-run and the order-file helper from $prefix; a training epoch through the mount"
else
  fail "the training step with the module's tools (exit $rc)"
  cat "$H/job.out"
fi

echo "easybuild test: $((SECONDS - t0)) s"
((failures == 0)) || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
