// Knobs of the CUDA kernel family and the shared-memory arithmetic that decides feasibility.
// Plain C++: usable (and tested) without CUDA.
#pragma once

#include "problem.hpp"

#include <cstddef>
#include <string>

namespace abtrack::kernels::mla_decode {

enum class Math {
  mma,
  fma,
  wgmma
};                                 // mma.sync m16n8k16 bf16 -> f32, scalar FMA (negative control), or
                                   // wgmma (two warpgroups, f16 tile in shared memory)
enum class Dequant { cvt, bits };  // cvt.rn.f16x2.e4m3x2 chain, or the shift/mask bit trick
// What L2 holds when a timed sample starts: none of the kernel's data either way; `dirty`: the
// flush's written lines, which the kernel writes back to DRAM as it evicts them; `clean`: lines
// read from a buffer the kernel never touches.
enum class L2Flush { dirty, clean };

// One variant of the kernel family.
struct CudaConfig {
  int warps = 8;   // warps per CTA: 4 or 8
  int stages = 2;  // cp.async ring depth: 1..4 (raw buffers, all in flight)
  int tile = 64;   // tokens per tile: 16, 32 or 64
  int splits = 0;  // splits per (batch row, head block); 0 = auto
  Math math = Math::mma;
  Dequant dequant = Dequant::bits;
};

inline constexpr int kHeadsPerCta = 32;
inline constexpr std::size_t kSm90SmemOptin = 232448;  // 227 KB, the sm_90 per-block opt-in limit

// "" when the knob values are in the family, else what is wrong (e.g. "warps must be 4 or 8").
std::string validate_config(const CudaConfig& config);

// Dynamic shared memory of one CTA. mma/fma: Q's A fragments (36,864 B) + raw fp8 ring (stages x T x
// 656 B) + f32 S partials of the 4 k parts (4 x 32 x (T+4) x 4 B) + P (32 x (T+8) bf16) + row
// statistics + the split's indices (4 B per slot). wgmma: the f16 K/V tile (65,536 B) + f16 Q
// (32,768) + bf16 Q RoPE (4,096) + f16 P (4,096) + the tile's RoPE (8,192) + S^T partials (8,192) + raw ring (stages x
// 41,984) + reductions and row statistics (1,024) + the ring's mbarriers and the rescale flags (24) + the indices.
std::size_t cuda_smem_bytes(const CudaConfig& config, int tiles_per_split);

// Whether the configuration fits a per-block limit of `smem_limit` bytes; `why` says how not.
struct Feasibility {
  bool feasible = true;
  std::string why;
  std::size_t smem_bytes = 0;
};
Feasibility cuda_feasibility(const CudaConfig& config, int tiles_per_split, std::size_t smem_limit);

// Threads per CTA: warps x 32, plus the producer warpgroup of the wgmma kernel (128).
int cuda_threads(const CudaConfig& config);

// Names of the knob values, as the driver spells them.
const char* to_string(Math math);
const char* to_string(Dequant dequant);

}  // namespace abtrack::kernels::mla_decode
