// The tiled (flash-decoding) sparse MLA decode on the CPU: the same algorithm as the CUDA
// kernels (tiles, online softmax in the log2 domain, splits + combine), in float, std::thread.
#pragma once

#include "problem.hpp"

#include <vector>

namespace abtrack::kernels::mla_decode {

// Knobs of the CPU implementation.
struct CpuConfig {
  int tile = 64;    // tokens per tile (>= 1)
  int threads = 0;  // worker threads (0 = all hardware threads)
  int splits = 1;   // splits per row (0 = auto)
};

// Split partials: o [batch][splits][heads][512] (= acc / l, 0 for an empty split) and
// lse [batch][splits][heads] in the log2 domain (-inf for an empty split).
struct Partials {
  int splits = 1;
  std::vector<float> o;
  std::vector<float> lse_log2;
};

// Combines split partials into the final bf16 out and natural-log lse (+inf, out 0 when every
// split is empty): M = max lse_s (0 if all -inf), L = sum 2^(lse_s - M), lse2 = M + log2 L,
// out = sum 2^(lse_s - lse2) o_s, lse = lse2 * ln 2.
void combine_splits(const Shape& shape, const Partials& partials, Outputs& out);

// Runs the tiled decode. Throws std::invalid_argument for a tile < 1.
Outputs cpu_tiled_decode(const Inputs& in, double softmax_scale, const CpuConfig& config);

// The effective number of splits `cpu_tiled_decode` uses for `config` (resolves auto).
int cpu_effective_splits(const Shape& shape, const CpuConfig& config);

}  // namespace abtrack::kernels::mla_decode
