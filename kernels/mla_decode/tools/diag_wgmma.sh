#!/usr/bin/env bash
# Where the wgmma kernel's time goes: a patched copy of kernels/ built with per-phase clock64
# sums (-DABTRACK_WGMMA_PHASES, CTA 0's, printed when the outputs are downloaded), and modes that skip its math
# (MLA_DEBUG_MODE=1: gathers only) or its gathers after the first ring fill (2: math only),
# timed side by side with the real kernel. Diagnostic only: patched outputs are wrong by design.
# Usage (repository root, GPU machine): bash kernels/mla_decode/tools/diag_wgmma.sh ["--stages 2 --splits 2"]
set -u
cfg="--math wgmma --warps 8 --tile 64 ${1:---stages 2}"
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
patch("mla_decode_wgmma.cu", "      std::uint8_t* dst = ring + slot * kStageBytes;\n",
      "      std::uint8_t* dst = ring + slot * kStageBytes;\n      if (p.debug_mode == 2 && i >= stages) {\n"
      "        if (lane == 0) mbar_expect(&full_s[slot], 0);\n        slot = slot + 1 == stages ? 0 : slot + 1;\n        continue;\n      }\n")
patch("mla_decode_wgmma.cu", "    const std::uint8_t* stage = ring + slot * kStageBytes;\n",
      "    const std::uint8_t* stage = ring + slot * kStageBytes;\n    if (p.debug_mode == 1) {\n"
      "      named_arrive(kBarEmpty + slot, kThreads);\n      slot = slot + 1 == stages ? 0 : slot + 1;\n"
      "      parity ^= slot == 0 ? 1u : 0u;\n      continue;\n    }\n")
PY
cmake -S "$work/kernels" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DABTRACK_WGMMA_PHASES >/dev/null &&
  cmake --build "$work/build" -j "$(nproc)" >/dev/null || exit 1
bench=$(find "$work/build" -name mla_decode_bench -type f | head -1)
for mode in 0 1 2; do
  printf '%s mode %s (%s): ' "$cfg" "$mode" "$(case $mode in 0) echo full;; 1) echo gathers only;; 2) echo math only;; esac)"
  # shellcheck disable=SC2086
  MLA_DEBUG_MODE=$mode "$bench" --device cuda --batch 64 --heads 32 $cfg --samples 10 >"$work/out.txt" 2>"$work/err.txt"
  tail -n 1 "$work/out.txt" | python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); print(d["median_us"], "us, splits", d["splits_used"])'
  [ "$mode" = 0 ] && grep -m 2 "wgmma phases" "$work/err.txt"
done
rm -rf "$work"
