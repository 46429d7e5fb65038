#!/usr/bin/env bash
# Installs and builds (scripts/setup.sh), then runs the whole test suite
# through ctest. Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
#
# scripts/test.sh --sanitize address|thread [ctest args]: the same tests on a
# sanitized build of its own (build-asan: AddressSanitizer + UBSan; build-tsan:
# ThreadSanitizer), by default the tiers each sanitizer is run on in CI -
# address: unit (leaks checked too), cli, fuse and mpi (the daemons exit with
# allocations libfuse and MPICH still hold, so leaks are not checked there);
# thread: unit, fuse and mpi. Any report fails the test that produced it.
# UCX_MEM_EVENTS=no: MPICH's UCX hooks madvise through libucm, whose lock
# crashes ThreadSanitizer in a thread that is exiting (a segfault inside
# libtsan, seen in every daemon); clairfs does not need UCX's memory events.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
if [[ ${1:-} == --sanitize ]]; then
  sanitize=${2:-}
  [[ $sanitize == address || $sanitize == thread ]] \
    || { echo "test.sh: --sanitize takes address or thread" >&2; exit 2; }
  shift 2
fi
scripts/setup.sh
if [[ -z $sanitize ]]; then
  cd "${BUILD_DIR:-build}"
  exec ctest --output-on-failure -j"$(nproc)" "$@"
fi

mpi_args=()
if command -v mpicxx.mpich >/dev/null; then
  mpi_args=(-DMPI_CXX_COMPILER="$(command -v mpicxx.mpich)" -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)")
fi
if [[ $sanitize == address ]]; then
  dir=build-asan flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
else
  # -g1: line tables only (reports still give file:line); a heavy test file compiles about a
  # quarter faster than with -g, though the whole stage showed no gain on a quiet machine.
  dir=build-tsan flags="-fsanitize=thread -O1" debug=-g1
fi
echo "test.sh: building with $flags into $dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_DEBUG="${debug:--g}" \
  -DCMAKE_EXE_LINKER_FLAGS="${flags%% *}" "${mpi_args[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
cd "$dir"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TSAN_OPTIONS=halt_on_error=1
export UCX_MEM_EVENTS=no
export CLAIRFS_SANITIZE=$sanitize  # timing-paced tests slow their readers for it
if (($#)); then
  exec ctest --output-on-failure -j"$(nproc)" "$@"
elif [[ $sanitize == address ]]; then
  ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$(nproc)" -L unit
  ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j"$(nproc)" -L "cli|fuse"
  ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -L mpi  # serial, as in the main run
else
  ctest --output-on-failure -j"$(nproc)" -L unit
  ctest --output-on-failure -j"$(nproc)" -L fuse
  ctest --output-on-failure -L mpi
fi
