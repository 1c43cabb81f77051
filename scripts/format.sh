#!/usr/bin/env bash
# Formats every tracked C++ and CUDA file with clang-format-14 and the repository's .clang-format.
# Usage: scripts/format.sh [--check]
#   --check  change nothing; list the files that are not formatted and exit 1 (a ctest test and
#            so CI run this)
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$cf" ] || { echo "format.sh: clang-format-14 is missing (apt-get install clang-format-14)" >&2; exit 2; }
mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' '*.c' ':!:shared/*')
[ ${#files[@]} -gt 0 ] || exit 0
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f"); done
  [ ${#bad[@]} -eq 0 ] && exit 0
  echo "format.sh: ${#bad[@]} file(s) not formatted as .clang-format says:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "format.sh: run scripts/format.sh to format them" >&2
  exit 1
fi
"$cf" -i "${files[@]}"
