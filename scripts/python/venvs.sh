#!/usr/bin/env bash
# Creates the Python virtual environments with the real TensorFlow/Keras/Horovod
# stacks, from PyPI, pinned by the requirements file of each (scripts/python/*.txt):
#   tf-current  tensorflow-cpu 2.21 + Keras 3.15
#   tf-keras2   tensorflow-cpu 2.15.1 + Keras 2.15 + Horovod 0.28.1 (MPI: Debian's MPICH)
#   easybuild   EasyBuild 5.4.1 (the install test: tests/install/easybuild_test.sh)
# under ${CLAIRFS_VENVS:-<repo>/.venvs}, with Debian's /usr/bin/python3.
#
# Idempotent: each venv holds a stamp (its requirements file, the Python version
# and this recipe, hashed); a venv whose stamp matches is left alone, so a second
# run costs a second. A changed requirements file rebuilds that venv. A failed
# install leaves no stamp: the next run starts that venv again.
# CLAIRFS_SKIP_VENVS=1 skips everything (offline machines; the `tf` tests then
# skip, or fail under CI=true).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
[[ "${CLAIRFS_SKIP_VENVS:-0}" == 1 ]] && { echo "setup: CLAIRFS_SKIP_VENVS=1: no Python venvs"; exit 0; }

VENVS=${CLAIRFS_VENVS:-$repo/.venvs}
PYTHON=/usr/bin/python3
RECIPE=1  # bump when the steps below change
HOROVOD=horovod==0.28.1
mkdir -p "$VENVS"

stamp_of() {  # the stamp a venv built from requirements file $1 must carry
  { cat "$1"; "$PYTHON" --version; echo "recipe $RECIPE"; } | sha256sum | cut -d' ' -f1
}

# build NAME MINUTES: (re)creates $VENVS/NAME from scripts/python/NAME.txt.
build() {
  local name=$1 minutes=$2 req=$repo/scripts/python/$1.txt dir=$VENVS/$1
  local want
  want=$(stamp_of "$req")
  if [[ -f $dir/.clairfs-stamp && $(cat "$dir/.clairfs-stamp") == "$want" ]]; then
    echo "setup: venv $name is up to date ($dir)"
    return 0
  fi
  local t0=$SECONDS
  echo "setup: creating venv $name in $dir (first time: about $minutes min, mostly downloads)"
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  echo "setup:   $name: installing $(grep -c '^[^#].*==' "$req") pinned packages from PyPI"
  "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req"
  if [[ $name == tf-keras2 ]]; then
    echo "setup:   $name: building $HOROVOD against MPICH (TensorFlow only, MPI only)"
    local mpicxx mpicc
    mpicxx=$(command -v mpicxx.mpich || command -v mpicxx)
    mpicc=$(command -v mpicc.mpich || command -v mpicc)
    # Horovod compiles its TensorFlow ops against the TensorFlow just
    # installed, so no build isolation; MPICH's wrappers pin the MPI even
    # where Open MPI is installed too.
    if ! HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_GLOO=1 \
        HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
        HOROVOD_CMAKE="$(command -v cmake)" MPICXX="$mpicxx" CC="$mpicc" CXX="$mpicxx" \
        MAKEFLAGS="-j$(nproc)" "$dir/bin/pip" install --quiet --disable-pip-version-check \
        --no-deps --no-build-isolation --no-cache-dir "$HOROVOD" >"$dir/horovod-build.log" 2>&1; then
      echo "setup: building $HOROVOD failed; the end of $dir/horovod-build.log:" >&2
      tail -n 30 "$dir/horovod-build.log" >&2
      return 1
    fi
  fi
  echo "setup:   $name: checking the imports"
  local check='import tensorflow as tf, keras; print("tensorflow", tf.__version__, "keras", keras.__version__)'
  [[ $name == tf-keras2 ]] && check+='; import horovod.tensorflow.keras as hvd; print("horovod", __import__("horovod").__version__)'
  [[ $name == easybuild ]] && check='from easybuild.tools.version import VERSION; print("easybuild", VERSION)'
  local out
  if ! out=$(TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES="" "$dir/bin/python" -c "$check" 2>&1); then
    echo "setup: venv $name does not import what it should:" >&2
    echo "$out" >&2
    return 1
  fi
  grep -E '^(tensorflow|horovod|easybuild) ' <<<"$out" | sed "s/^/setup:   $name: /"
  echo "$want" >"$dir/.clairfs-stamp"
  echo "setup: venv $name ready in $((SECONDS - t0)) s"
}

build tf-current 3
build tf-keras2 5
build easybuild 1
