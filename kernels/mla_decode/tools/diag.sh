#!/usr/bin/env bash
# Where the time goes: a decode kernel timed with its math or its gathers switched off.
# Builds a patched copy of kernels/ whose decode kernels can skip their math
# (MLA_DEBUG_MODE=1: the gather pipeline alone) or their gathers after the first ring fill
# (MLA_DEBUG_MODE=2: the math alone, on whatever the ring holds), and times both against the real
# kernel side by side. The wgmma kernel is built with per-phase clock64 sums too
# (-DABTRACK_WGMMA_PHASES: CTA 0's, printed when the outputs are downloaded). Diagnostic only:
# the patched outputs are wrong by design (check fails).
# DIAG_FLAGS adds nvcc flags (e.g. DIAG_FLAGS=-Xptxas=-v).
# Usage (repository root, GPU machine):
#   bash kernels/mla_decode/tools/diag.sh ["--warps 8 --tile 32 --stages 2"]
#   bash kernels/mla_decode/tools/diag.sh "--math wgmma --warps 8 --tile 64 --stages 2"
set -u
cfg="${1:---warps 8 --tile 32 --stages 2}"
work=$(mktemp -d)
cp -r kernels "$work/kernels" && cp -r cmake "$work/cmake"
python3 - "$work/kernels/mla_decode" <<'PY'
import sys
d = sys.argv[1]
def patch(name, old, new):
    p = f"{d}/{name}"
    s = open(p).read()
    assert old in s, (name, old)
    open(p, "w").write(s.replace(old, new, 1))
patch("mla_decode_kernels.cuh", "  float scale_log2;", "  int debug_mode;\n  float scale_log2;")
patch("cuda_runner.cu", "  p.scale_log2 = d.scale_log2;",
      "  p.debug_mode = std::getenv(\"MLA_DEBUG_MODE\") ? std::atoi(std::getenv(\"MLA_DEBUG_MODE\")) : 0;\n"
      "  p.scale_log2 = d.scale_log2;")
patch("cuda_runner.cu", '#include "mla_decode_kernels.cuh"', '#include "mla_decode_kernels.cuh"\n#include <cstdlib>')
# The mma.sync/FMA kernels: the compute warps issue the gathers.
patch("mla_decode_kernels.cu", "  std::uint8_t* dst = raw_s + slot * (T * kTokenBytes) + lane * 16;\n",
      "  if (p.debug_mode == 2 && tile >= p.stages) return;\n  std::uint8_t* dst = raw_s + slot * (T * kTokenBytes) + lane * 16;\n")
patch("mla_decode_kernels.cu", "    scores<W, T, kFma, kBits>(",
      "    if (p.debug_mode == 1) continue;\n    scores<W, T, kFma, kBits>(")
# The wgmma kernel: the producer warps announce empty copies; the math warps hand each slot back
# at once (and, with the producer conversion, pass its two barriers; the producers still convert
# their k-steps of the V tile, so "gathers alone" includes that conversion).
patch("mla_decode_wgmma.cu", "  std::uint8_t* dst = ring + slot * kStageBytes;\n",
      "  std::uint8_t* dst = ring + slot * kStageBytes;\n  if (p.debug_mode == 2 && i >= p.stages) {\n"
      "    if (lane == 0) mbar_expect(&full_s[slot], 0);\n    return;\n  }\n")
patch("mla_decode_wgmma.cu", "    const std::uint8_t* stage = ring + slot * kStageBytes;\n",
      "    const std::uint8_t* stage = ring + slot * kStageBytes;\n    if (p.debug_mode == 1) {\n"
      "      if (kPks == 0 && it + stages < n_tiles) named_arrive(kBarEmpty + slot, kRingThreads);\n"
      "      if (kPks > 0) named_arrive(kBarVFree, kThreads), named_sync(kBarVReady, kThreads);\n"
      "      slot = slot + 1 == stages ? 0 : slot + 1;\n"
      "      parity ^= slot == 0 ? 1u : 0u;\n      continue;\n    }\n")
PY
cmake -S "$work/kernels" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS="-DABTRACK_WGMMA_PHASES ${DIAG_FLAGS:-}" >/dev/null &&
  cmake --build "$work/build" -j "$(nproc)" >/dev/null || exit 1
bench=$(find "$work/build" -name mla_decode_bench -type f | head -1)
for mode in 0 1 2; do
  printf '%-34s mode %s (%s): ' "$cfg" "$mode" "$(case $mode in 0) echo full;; 1) echo gathers only;; 2) echo math only;; esac)"
  # shellcheck disable=SC2086
  MLA_DEBUG_MODE=$mode "$bench" --device cuda --batch 64 --heads 32 $cfg --samples 10 >"$work/out.txt" 2>"$work/err.txt"
  tail -n 1 "$work/out.txt" |
    python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); print(d["median_us"], "us, splits", d["splits_used"])'
  [ "$mode" = 0 ] && grep -m 4 "wgmma phases\|wgmma CTAs\|wgmma stamps" "$work/err.txt" && grep "wgmma CTAs\|wgmma stamps" "$work/err.txt" | tail -2
  [ "$mode" = 1 ] && grep "wgmma CTAs" "$work/err.txt" | tail -1
done
rm -rf "$work"
