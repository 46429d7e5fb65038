#!/usr/bin/env bash
# Installs every missing dependency from Debian's packages, creates the pinned
# TensorFlow/Keras/Horovod virtual environments from PyPI (scripts/python/
# venvs.sh), then configures and builds clairfs into build/. Idempotent: a
# second run installs nothing and rebuilds only what changed.
#
# clang and libclang-rt-14-dev (libFuzzer's runtime, only recommended by clang,
# which --no-install-recommends skips) are for scripts/fuzz.sh and the
# thread-safety analysis (scripts/check_threads.sh), clang-format for
# scripts/check_format.sh; the build itself uses GCC. lmod is the modules tool
# of the EasyBuild install test (tests/install), EasyBuild itself a venv.
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo),
# CLAIRFS_SKIP_APT=1 to skip the package check (offline machines),
# CLAIRFS_VENVS (default .venvs) and CLAIRFS_SKIP_VENVS=1 (see venvs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}

packages=(
  build-essential cmake pkg-config
  libfuse3-dev fuse3
  mpich libmpich-dev
  libzstd-dev zstd libxxhash-dev
  libyaml-cpp-dev catch2 libcli11-dev
  clang libclang-rt-14-dev clang-format
  slurmctld slurmd slurm-client munge
  python3 python3-numpy python3-torch python3-torchvision python3-pil
  python3-venv python3-dev python3-matplotlib
  strace
  lmod
)

if [[ "${CLAIRFS_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

# Where both MPI flavours are installed, pin MPICH.
mpi_args=()
if command -v mpicxx.mpich >/dev/null; then
  mpi_args=(-DMPI_CXX_COMPILER="$(command -v mpicxx.mpich)" -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)")
fi

scripts/python/venvs.sh

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${mpi_args[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "setup: built into $BUILD_DIR/bin: $(ls "$BUILD_DIR/bin" | tr '\n' ' ')"
