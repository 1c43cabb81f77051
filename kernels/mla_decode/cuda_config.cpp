#include "cuda_config.hpp"

#include "format.hpp"

#include <algorithm>

namespace abtrack::kernels::mla_decode {

std::string validate_config(const CudaConfig& c) {
  if (c.warps != 4 && c.warps != 8) return "warps must be 4 or 8";
  if (c.stages < 1 || c.stages > 4) return "stages must be 1, 2, 3 or 4";
  if (c.tile != 16 && c.tile != 32 && c.tile != 64) return "tile must be 16, 32 or 64";
  if (c.splits < 0) return "splits must be >= 1 or auto";
  if (c.math == Math::wgmma && (c.warps != 8 || c.tile != 64 || c.dequant != Dequant::bits))
    return "math wgmma needs warps 8, tile 64 and dequant bits (two warpgroups, 64-token tiles as wgmma's M, "
           "the bit-trick conversion to f16)";
  return "";
}

std::size_t cuda_smem_bytes(const CudaConfig& c, int tiles_per_split) {
  // Must match the carve-up in mla_decode_kernels.cu.
  if (c.math == Math::wgmma)  // must match mla_decode_wgmma.cu
    return 65536 + 32768 + 4096 + 4096 + 8192 + static_cast<std::size_t>(c.stages) * 41 * 64 * 16 +
           (2 * 4 * 16 + 4 * 32) * 4 + 16 + 8 + 8 * 2 * 32 * 4 + static_cast<std::size_t>(tiles_per_split) * c.tile * 4;
  std::size_t bytes = 0;
  bytes += 2 * (kDimQk / 16) * 32 * 16;                                    // Q A fragments
  bytes += static_cast<std::size_t>(c.stages) * c.tile * kTokenBytes;      // raw fp8 ring
  bytes += static_cast<std::size_t>(4) * kHeadsPerCta * (c.tile + 4) * 4;  // f32 S partials (4 k parts)
  bytes += static_cast<std::size_t>(kHeadsPerCta) * (c.tile + 8) * 2;      // P (bf16)
  bytes += 3 * kHeadsPerCta * 4;                                           // alpha, m, l
  bytes += static_cast<std::size_t>(tiles_per_split) * c.tile * 4;         // indices
  return bytes;
}

Feasibility cuda_feasibility(const CudaConfig& c, int tiles_per_split, std::size_t smem_limit) {
  Feasibility f;
  f.smem_bytes = cuda_smem_bytes(c, tiles_per_split);
  if (f.smem_bytes > smem_limit) {
    f.feasible = false;
    f.why = "shared memory " + std::to_string(f.smem_bytes) + " bytes per CTA (stages " + std::to_string(c.stages) +
            " x tile " + std::to_string(c.tile) + " x 656 B ring + " +
            std::string(c.math == Math::wgmma ? "f16 K/V tile" : "S partials") + " + Q + P + " +
            std::to_string(tiles_per_split * c.tile) + " indices) exceeds the per-block limit of " +
            std::to_string(smem_limit) + " bytes";
  }
  return f;
}

int cuda_threads(const CudaConfig& c) { return c.warps * 32 + (c.math == Math::wgmma ? 128 : 0); }

const char* to_string(Math math) {
  switch (math) {
    case Math::mma: return "mma";
    case Math::fma: return "fma";
    case Math::wgmma: return "wgmma";
  }
  return "?";
}
const char* to_string(Dequant dequant) { return dequant == Dequant::cvt ? "cvt" : "bits"; }

}  // namespace abtrack::kernels::mla_decode
