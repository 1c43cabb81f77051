#!/usr/bin/env bash
# Nsight Compute metrics of one decode launch: pipe use, bank conflicts, stall reasons.
# Usage (repository root, GPU machine), at B=64 h=32:
#   PROFILE_CFG="--warps 8 --tile 32 --stages 2" bash kernels/mla_decode/tools/profile_metrics.sh
# Builds build-device/ first if it holds no bench. Prints the metrics above 0.05 (and the time and
# the instruction count always).
set -u
b=build-device/kernels/mla_decode_bench
[ -x $b ] || { cmake -S kernels -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-device -j16 >/dev/null; }
M="gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldgsts.sum"
for cfg in "${PROFILE_CFG:---warps 8 --tile 32 --stages 2}"; do
  echo "=== $cfg"
  ncu --clock-control none -k regex:decode_kernel --launch-skip 1 --launch-count 1 --metrics "$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    $b --device cuda --batch 64 --heads 32 $cfg --samples 1 --warmup 1 2>&1 | grep -E "^\s+(gpu__|sm__|smsp__|l1tex__|dram__)" | awk '$NF+0 > 0.05 || $0 ~ /gpu__time|inst_executed.sum/' | sed 's/smsp__average_warps_issue_stalled_//'
done
