#!/usr/bin/env bash
# Nsight Compute report of one decode launch (default: the wgmma kernel), by section and SASS line.
# Usage (repository root, GPU machine), at B=64 h=32:
#   OUT=DIR PROFILE_CFG="--math wgmma --warps 8 --tile 64 --stages 2" bash kernels/mla_decode/tools/profile_wgmma.sh
# Writes the summary sections to $OUT/ncu_sections.txt and per-SASS-instruction counts and stall
# samples to $OUT/ncu_sass.csv.gz. Builds build-device/ first if it holds no bench.
set -u
out="${OUT:-/tmp/mla_out}"
mkdir -p "$out"
b=build-device/kernels/mla_decode_bench
[ -x $b ] || { cmake -S kernels -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-device -j16 >/dev/null; }
cfg="${PROFILE_CFG:---math wgmma --warps 8 --tile 64 --stages 2}"
ncu --clock-control none -k regex:decode_ --launch-skip 1 --launch-count 1 --import-source yes \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section InstructionStats \
  --section LaunchStats --section Occupancy --section SourceCounters -o "$out/rep" \
  $b --device cuda --batch 64 --heads 32 $cfg --samples 1 --warmup 1 >"$out/ncu_run.txt" 2>&1
ncu -i "$out/rep.ncu-rep" --page details >"$out/ncu_sections.txt" 2>&1
ncu -i "$out/rep.ncu-rep" --page source --csv --print-source sass 2>/dev/null | gzip >"$out/ncu_sass.csv.gz"
rm -f "$out/rep.ncu-rep"
grep -E "Duration|Throughput|Issue Slots|Eligible|No Eligible|Bank|Shared|Stall|Pipe" "$out/ncu_sections.txt" | head -60
