#!/usr/bin/env bash
# Builds kernels/ standalone on a GPU machine, runs the CUDA tests, then a bench grid.
# Usage (from the repository root): bash kernels/mla_decode/tools/device_run.sh [tests|grid|all] [GRID]
# Writes build.log, ctest.log, grid.jsonl (one result line per run), grid.log to $OUT.
set -u
mode="${1:-all}"
grid="${2:-main}"
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

if [ "$mode" = tests ] || [ "$mode" = all ]; then
  (cd "$build" && ctest --output-on-failure -R cuda >"$out/ctest.log" 2>&1)
  grep -E 'variants ran|passed, [0-9]+ failed' "$out/ctest.log"
  grep -E 'Test +#|tests passed|FAILED|CHECK' "$out/ctest.log" | head -40
fi

run() {  # run ARGS...: one bench invocation, its last line to grid.jsonl
  echo "== $*" >>"$out/grid.log"
  "$bench" --device cuda "$@" >"$out/last.txt" 2>>"$out/grid.log"
  local rc=$?
  cat "$out/last.txt" >>"$out/grid.log"
  tail -n 1 "$out/last.txt" | sed "s/^{/{\"rc\": $rc, /" >>"$out/grid.jsonl"
}

if [ "$mode" = grid ] || [ "$mode" = all ]; then
  case "$grid" in
    main)
      for w in 4 8; do for t in 16 32 64; do for s in 1 2 3 4; do
        run --batch 64 --heads 32 --warps $w --tile $t --stages $s
      done; done; done
      for sp in 1 2 4 8 16; do run --batch 64 --heads 32 --warps 8 --tile 32 --stages 2 --splits $sp; done
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 2 --math fma
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 2 --dequant cvt
      for h in 64 128; do for w in 4 8; do for t in 16 32 64; do
        run --batch 64 --heads $h --warps $w --tile $t --stages 2
      done; done; done
      for b in 1 16 128; do for h in 32 64 128; do for t in 32 64; do
        run --batch $b --heads $h --warps 8 --tile $t --stages 2
      done; done; done
      ;;
    v2)  # the figures in docs/mla-decode-kernels.md (2026-11-30, run 4): about 26 runs
      for t in 64 32 16; do for s in 1 2; do run --batch 64 --heads 32 --warps 8 --tile $t --stages $s; done; done
      for t in 64 32 16; do run --batch 64 --heads 32 --warps 4 --tile $t --stages 1; done
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 3
      for sp in 1 4 8; do run --batch 64 --heads 32 --warps 8 --tile 32 --stages 1 --splits $sp; done
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 1 --math fma
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 1 --dequant cvt
      for h in 64 128; do for t in 64 32; do run --batch 64 --heads $h --warps 8 --tile $t --stages 1; done; done
      for b in 16 128; do for t in 64 32; do run --batch $b --heads 32 --warps 8 --tile $t --stages 1; done; done
      ;;
    v3)  # the register-fragment design (2026-11-30, session 2)
      for w in 8 4; do for t in 64 32 16; do for s in 1 2 3 4; do
        run --batch 64 --heads 32 --warps $w --tile $t --stages $s
      done; done; done
      ;;
    v3b)  # splits, controls and other shapes for the best variant: BEST="--warps W --tile T --stages S"
      for sp in 1 2 4 8; do run --batch 64 --heads 32 $BEST --splits $sp; done
      run --batch 64 --heads 32 $BEST --math fma
      run --batch 64 --heads 32 $BEST --dequant cvt
      for h in 64 128; do run --batch 64 --heads $h $BEST; done
      for b in 1 16 128; do run --batch $b --heads 32 $BEST; done
      ;;
    v4)  # session 3, first part: dequant fp8 (dropped; run at commit 6e0cc84 with --dequant bits|fp8)
      for w in 8 4; do for t in 32 16 64; do for s in 1 2 3; do
        run --batch 64 --heads 32 --warps $w --tile $t --stages $s
      done; done; done
      ;;
    v5)  # session 3: the leaner instruction stream, every variant at B=64 h=32, then other shapes
      for w in 8 4; do for t in 32 16 64; do for s in 1 2 3; do
        run --batch 64 --heads 32 --warps $w --tile $t --stages $s
      done; done; done
      for h in 64 128; do run --batch 64 --heads $h --warps 8 --tile 32 --stages 2; done
      for b in 16 128; do run --batch $b --heads 32 --warps 8 --tile 32 --stages 2; done
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 2 --dequant cvt
      run --batch 64 --heads 32 --warps 8 --tile 32 --stages 2 --math fma
      ;;
    v6)  # session 3: dequant cvt feeding Q K^T in f16 (commit 3f3c236, reverted: slower), against bits
      for dq in cvt bits; do for w in 8 4; do for t in 32 16 64; do for s in 1 2 3; do
        run --batch 64 --heads 32 --warps $w --tile $t --stages $s --dequant $dq
      done; done; done; done
      ;;
    v7)  # session 4: the wgmma kernel beside the best mma.sync variant, same shapes
      for s in 2 1; do for sp in auto 1 2 4; do
        run --batch 64 --heads 32 --math wgmma --warps 8 --tile 64 --stages $s --splits $sp
      done; done
      run --batch 64 --heads 32 --warps 4 --tile 32 --stages 2
      for h in 64 128; do
        run --batch 64 --heads $h --math wgmma --warps 8 --tile 64 --stages 2
        run --batch 64 --heads $h --warps 4 --tile 32 --stages 2
      done
      for b in 16 128; do
        run --batch $b --heads 32 --math wgmma --warps 8 --tile 64 --stages 2
        run --batch $b --heads 32 --warps 4 --tile 32 --stages 2
      done
      ;;
    quick)
      for w in 4 8; do for t in 16 32 64; do for s in 2 3; do
        run --batch 64 --heads 32 --warps $w --tile $t --stages $s
      done; done; done
      for sp in 1 4 8; do run --batch 64 --heads 32 --warps 8 --tile 32 --stages 2 --splits $sp; done
      run --batch 64 --heads 64 --warps 8 --tile 32 --stages 2
      run --batch 64 --heads 128 --warps 8 --tile 32 --stages 2
      ;;
    *)
      shift 2
      run "$@"
      ;;
  esac
  python3 kernels/mla_decode/tools/summarize.py "$out/grid.jsonl"
fi

if [ "$mode" = profile ] || [ "${PROFILE:-0}" = 1 ]; then
  ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
      -k regex:decode_ --launch-skip 1 --launch-count 1 \
      "$bench" --device cuda --batch 64 --heads 32 --warps 8 --tile "${PROFILE_TILE:-32}" --stages "${PROFILE_STAGES:-2}" --samples 1 --warmup 1 \
      >"$out/ncu.txt" 2>&1
  grep -E 'Duration|Throughput|Stall|Issue Slots|Eligible|Active Warps|No Eligible|Registers|Achieved' "$out/ncu.txt" | head -60
fi
