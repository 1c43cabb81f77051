#!/usr/bin/env bash
# The device runner: builds kernels/ alone on a GPU machine, then runs the CUDA tests, one bench,
# or the occupancy experiment against its history.
# Usage (repository root, GPU machine):
#   OUT=DIR bash kernels/mla_decode/tools/device_run.sh [tests | bench BENCH-ARGS... | occupancy]
#   occupancy: `abtrack run --all --rounds ${ROUNDS:-9}` of examples/occupancy/abtrack.yaml (one
#   commit per run), then `abtrack check --history --min-effect ${MIN_EFFECT:-2%}` (its exit status:
#   1 when a cell is worse than the previous code's pool by more than that); 4: the build failed,
#   5: a run failed. ABTRACK names the abtrack
#   binary (default: abtrack on PATH). Logs: build-plan.log, run.log, check.txt.
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
if [ "$mode" = occupancy ]; then
  # The plan's command runs build/kernels/mla_decode_bench: build/ as it is when configured (a
  # top-level build has it too), else kernels/ alone.
  ab="${ABTRACK:-abtrack}"
  plan=examples/occupancy/abtrack.yaml
  { if [ -f build/CMakeCache.txt ]; then cmake --build build -j "$(nproc)" --target mla_decode_bench
    else cmake -S kernels -B build -DCMAKE_BUILD_TYPE=Release -DABTRACK_ENABLE_TESTS=OFF &&
         cmake --build build -j "$(nproc)" --target mla_decode_bench; fi; } >"$out/build-plan.log" 2>&1 ||
    { tail -40 "$out/build-plan.log"; echo "device_run: the build failed" >&2; exit 4; }
  "$ab" -p "$plan" run --all --rounds "${ROUNDS:-9}" 2>&1 | tee "$out/run.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "device_run: a run failed or was invalid ($out/run.log)" >&2; exit 5; }
  "$ab" -p "$plan" check --history --min-effect "${MIN_EFFECT:-2%}" --format text | tee "$out/check.txt"
  exit "${PIPESTATUS[0]}"
fi
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
    echo "usage: device_run.sh [tests | bench BENCH-ARGS... | occupancy]" >&2
    exit 2
    ;;
esac
