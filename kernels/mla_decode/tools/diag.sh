#!/usr/bin/env bash
# Where the time goes: builds a patched copy of kernels/ whose decode kernel can skip its math
# (MLA_DEBUG_MODE=1: the gather pipeline alone) or its gathers after the first ring fill
# (MLA_DEBUG_MODE=2: the math alone, on whatever the ring holds), and times both against the real
# kernel side by side. Diagnostic only: the patched outputs are wrong by design (check fails).
# Usage (repository root, GPU machine): bash kernels/mla_decode/tools/diag.sh ["--warps 8 --tile 32 --stages 2"]
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
patch("mla_decode_kernels.cu", "  auto issue = [&](int tile, int slot) {\n",
      "  auto issue = [&](int tile, int slot) {\n    if (p.debug_mode == 2 && tile >= stages) return;\n")
patch("mla_decode_kernels.cu", "    // S = Q K^T straight from the raw fp8 rows",
      "    if (p.debug_mode == 1) continue;\n    // S = Q K^T straight from the raw fp8 rows")
PY
cmake -S "$work/kernels" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build "$work/build" -j "$(nproc)" >/dev/null || exit 1
bench=$(find "$work/build" -name mla_decode_bench -type f | head -1)
for mode in 0 1 2; do
  printf '%-34s mode %s (%s): ' "$cfg" "$mode" "$(case $mode in 0) echo full;; 1) echo gathers only;; 2) echo math only;; esac)"
  # shellcheck disable=SC2086
  MLA_DEBUG_MODE=$mode "$bench" --device cuda --batch 64 --heads 32 $cfg --samples 10 2>/dev/null | tail -n 1 |
    python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); print(d["median_us"], "us, splits", d["splits_used"])'
done
rm -rf "$work"
