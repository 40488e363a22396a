#!/usr/bin/env bash
# Fails when a C++ or CUDA source in the repository is not as clang-format (.clang-format) writes
# it, naming the files and the command that fixes them. CI runs it first (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
unformatted=()
for f in "${sources[@]}"; do
  clang-format --style=file "$f" | cmp -s - "$f" || unformatted+=("$f")
done
if [[ ${#unformatted[@]} -gt 0 ]]; then
  echo "error: ${#unformatted[@]} file(s) not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "fix: clang-format -i ${unformatted[*]}" >&2
  exit 1
fi
echo "== formatting: ${#sources[@]} C++ and CUDA files as clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1) writes them"
