#!/usr/bin/env bash
# Records what the real CUDA tools print for facts.cu, into the folder the fakes in tests/e2e/fake/
# replay (recorded/). Run on a machine with the CUDA toolkit, Nsight Compute and a Hopper GPU:
#   bash tests/data/cuda/record.sh OUTDIR      (then copy OUTDIR's files into recorded/)
# recorded/ was made with nvcc and cuobjdump 13.0 and ncu 2025.3.1 on an H200 (versions.txt).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: record.sh OUTDIR}
mkdir -p "$out"
cd "$out" || exit 1
nvcc=${NVCC:-nvcc}
"$nvcc" -cubin -arch=sm_90a -maxrregcount=32 -Xptxas -v "$here/facts.cu" -o facts.cubin 2>ptxas.log
"$nvcc" -arch=sm_90a -maxrregcount=32 "$here/facts.cu" -o facts
cuobjdump -res-usage facts.cubin >res-usage.txt 2>&1
cuobjdump -sass facts.cubin >sass.txt 2>&1
cuobjdump -res-usage facts >res-usage-exe.txt 2>&1
echo "plain text" >text.txt
{ cuobjdump -res-usage text.txt 2>&1; echo "exit $?"; } >res-usage-text.txt
{ cuobjdump -res-usage /bin/ls 2>&1; echo "exit $?"; } >res-usage-host-elf.txt
{ cuobjdump --version; ncu --version; } >versions.txt 2>&1
# The occupancy set of docs/plan.md and a few more, on the second launch of `tidy`, through a
# shell as abtrack runs commands; then a tensor-core kernel; a metric ncu does not know; a kernel
# regex that matches nothing; and ncu's default units.
occupancy=launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,sm__maximum_warps_per_active_cycle_pct,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
ncu --csv --clock-control none --print-units base --target-processes all --metrics "$occupancy" -k regex:tidy --launch-skip 1 --launch-count 1 /bin/sh -c ./facts >ncu-occupancy.txt 2>&1
ncu --csv --clock-control none --print-units base --target-processes all --metrics "$occupancy" -k regex:tensor --launch-count 1 ./facts >ncu-tensor.txt 2>&1
ncu --csv --clock-control none --print-units base --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,no_such__metric.sum -k regex:tidy --launch-count 1 ./facts >ncu-badmetric.txt 2>&1
ncu --csv --clock-control none --print-units base --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed -k regex:no_kernel_like_this --launch-count 1 ./facts >ncu-nokernel.txt 2>&1
ncu --csv --clock-control none --metrics dram__bytes_read.sum,gpu__time_duration.sum -k regex:crowded --launch-count 1 ./facts >ncu-units-auto.txt 2>&1
rm -f facts text.txt
