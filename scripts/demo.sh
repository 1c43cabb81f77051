#!/usr/bin/env bash
# The whole loop on the example experiment, in a scratch repository: installs missing Debian
# packages, builds abtrack and the kernel family's bench driver, runs examples/occupancy
# (the CUDA variants on an NVIDIA GPU, the CPU variants otherwise), then shows the A/B document
# and `git log`.
#
#   scripts/demo.sh            (ABTRACK_DEMO_DIR=DIR keeps the scratch repository there)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
. scripts/deps.sh
abtrack_install_deps

echo "abtrack demo: building abtrack and mla_decode_bench" >&2
abtrack_build build abtrack mla_decode_bench >/dev/null
abtrack="$src/build/abtrack"

plan=examples/occupancy/cpu.yaml
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
   build/kernels/mla_decode_bench --help 2>&1 | grep -q -- "--device cpu|cuda" &&
   grep -q "ABTRACK_ENABLE_CUDA:BOOL=ON" build/CMakeCache.txt; then
  plan=examples/occupancy/abtrack.yaml
  echo "abtrack demo: GPU found, running the CUDA variants ($plan)" >&2
else
  echo "abtrack demo: no GPU, running the CPU variants of the kernel family ($plan)" >&2
fi

demo=${ABTRACK_DEMO_DIR:-$(mktemp -d /tmp/abtrack-demo.XXXXXX)}
mkdir -p "$demo"
cd "$demo"
[ -d .git ] || git init -q -b main
# The plan runs build/kernels/mla_decode_bench from the repository root: point it at ours.
mkdir -p examples/occupancy
cp "$src/$plan" abtrack.yaml
sed -i 's|^doc: examples/occupancy/|doc: |' abtrack.yaml
[ -e build ] || ln -s "$src/build" build
printf '/build\n' >.gitignore
# A scratch repository may have no identity; use one for the demo only.
if ! git config user.name >/dev/null; then
  export GIT_AUTHOR_NAME="abtrack demo" GIT_AUTHOR_EMAIL="demo@abtrack.invalid"
  export GIT_COMMITTER_NAME="abtrack demo" GIT_COMMITTER_EMAIL="demo@abtrack.invalid"
fi
git add .gitignore && git commit -q -m "demo: ignore the build link" || true

echo "\$ abtrack init" >&2
"$abtrack" init
echo "\$ abtrack run" >&2
set +e
"$abtrack" run
rc=$?
set -e
doc=$(sed -n 's/^doc: //p' abtrack.yaml)
echo
echo "===== $demo/$doc ====="
cat "$doc"
echo
echo "===== git log --oneline ====="
git log --oneline
echo
"$abtrack" verify
echo "abtrack demo: scratch repository kept at $demo (abtrack run exited $rc)" >&2
