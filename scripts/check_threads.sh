#!/usr/bin/env bash
# Clang's thread-safety analysis over every source file of the product: a
# member marked CLAIRFS_GUARDED_BY(mu_) touched without mu_ held, a function
# marked CLAIRFS_REQUIRES called without it, a lock not released, is an error
# (base/mutex.hpp). Syntax-only: nothing is built. Run by ctest (label
# static) and so by scripts/test.sh and CI. Exit 0 clean, 1 on a finding,
# 2 when clang++ is missing (scripts/setup.sh installs it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v clang++ >/dev/null || { echo "check_threads: clang++ missing (scripts/setup.sh installs it)" >&2; exit 2; }
mpicxx=$(command -v mpicxx.mpich || command -v mpicxx)
flags=(-std=c++20 -I"$repo" $(pkg-config --cflags fuse3 libzstd libxxhash)
       $("$mpicxx" -show | tr ' ' '\n' | grep '^-I' || true)
       -fsyntax-only -Wno-everything -Wthread-safety -Werror=thread-safety)
cd "$repo"
mapfile -t sources < <(find base fs prefetch partitioner tools -name '*.cpp' | sort)
if printf '%s\0' "${sources[@]}" | xargs -0 -P "$(nproc)" -n 8 clang++ "${flags[@]}"; then
  echo "check_threads: ${#sources[@]} files, no finding"
else
  echo "check_threads: findings above (base/mutex.hpp says what the annotations mean)" >&2
  exit 1
fi
