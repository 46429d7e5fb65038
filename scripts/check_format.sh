#!/usr/bin/env bash
# Every C++ file of the project formatted as .clang-format says (Debian 12's
# clang-format 14). `scripts/check_format.sh --fix` rewrites them in place.
# Run by ctest (label static). Exit 0 clean, 1 with the files that differ.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v clang-format >/dev/null || { echo "check_format: clang-format missing (scripts/setup.sh installs it)" >&2; exit 2; }
cd "$repo"
mapfile -t files < <(find base fs prefetch partitioner tools tests \( -name '*.cpp' -o -name '*.hpp' \) | sort)
if [[ ${1:-} == --fix ]]; then
  clang-format -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check_format: not formatted: %s\n' "${bad[@]}" >&2
  echo "check_format: run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
