#!/usr/bin/env bash
# The device runner: builds kernels/ alone on a GPU machine, then runs the CUDA tests or one bench.
# Usage (repository root, GPU machine):
#   OUT=DIR bash kernels/mla_decode/tools/device_run.sh [tests | bench BENCH-ARGS...]
# Writes to $OUT (default /tmp/mla_out): gpu.txt (clocks, driver), build.log (with ptxas's
# registers and spills per kernel), and ctest.log, or bench.txt (its last line the JSON result)
# and bench.err. Measurements that compare variants belong in an abtrack plan, not here.
set -u
mode="${1:-tests}"
[ $# -gt 0 ] && shift
out="${OUT:-/tmp/mla_out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$out/gpu.txt" 2>&1
build=build-device
if ! { cmake -S kernels -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DABTRACK_CUDA_RESOURCE_USAGE=ON &&
       cmake --build "$build" -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
grep -E 'Used [0-9]+ registers|spill' "$out/build.log" | sort | uniq -c | head -20
bench="$build/kernels/mla_decode_bench"

case "$mode" in
  tests)
    (cd "$build" && ctest --output-on-failure -R cuda >"$out/ctest.log" 2>&1)
    rc=$?
    grep -E 'Test +#|tests passed|FAILED|CHECK' "$out/ctest.log" | head -40
    exit "$rc"
    ;;
  bench)
    "$bench" --device cuda "$@" >"$out/bench.txt" 2>"$out/bench.err"
    rc=$?
    tail -n 1 "$out/bench.txt"
    exit "$rc"
    ;;
  *)
    echo "usage: device_run.sh [tests | bench BENCH-ARGS...]" >&2
    exit 2
    ;;
esac
