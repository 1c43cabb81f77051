// The sparse MLA FP8 decode kernels (sm_90): the split kernel family and the combine kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace abtrack::kernels::mla_decode {

// Arguments of the decode kernel. Grid: (splits, ceil(heads / 32), batch); block: warps * 32.
struct KernelParams {
  const __nv_bfloat16* q;       // [batch][heads][576]
  const std::uint8_t* pool;     // [pool][656]
  const std::int32_t* indices;  // [batch][topk]
  __nv_bfloat16* out;           // [batch][heads][512]   (written when splits == 1)
  float* lse;                   // [batch][heads]        (written when splits == 1)
  float* part_o;                // [batch][splits][heads][512] (splits > 1; the wgmma kernel: f16, in its first half)
  float* part_lse;              // [batch][splits][heads], log2 domain (splits > 1)
  int* done;                    // [batch][head blocks] CTAs finished (wgmma kernel, splits > 1; zero
                                // before a launch, and again after it)
  int batch, heads, topk, splits, tiles, tiles_per_split, stages;
  float scale_log2;  // softmax scale * log2(e)
  int cluster;       // wgmma kernel: 1 when launched in clusters of `splits` CTAs along x,
                     // whose splits are combined through distributed shared memory
                     // (no partials, no counts); 0: the last CTA combines them
};

// The decode kernel instantiation for (warps, tile, math fma, dequant bits), or nullptr for
// values outside the family. Launch with cudaLaunchKernel(ptr, grid, block, {&params},
// dynamic_smem, stream).
const void* decode_kernel(int warps, int tile, bool fma, bool bits);

// The wgmma kernel (`--math wgmma`): two math warpgroups and a producer warpgroup, 64-token
// tiles; stages is a run-time argument. Same grid and parameters; with splits it combines them
// itself, so no combine kernel follows it: launched in clusters of `splits` CTAs along x
// (cudaLaunchAttributeClusterDimension, params.cluster = 1) each CTA combines its share of the
// heads from its peers' shared memory; otherwise the last CTA of a row and head block combines
// them from the partials.
// The wgmma kernel for `stages` (one stage: built without the producer conversion), launched in
// clusters of `cluster` CTAs (2, 4 or 8: a build of its own for each; 1: not in clusters).
const void* decode_kernel_wgmma(int stages, int cluster);
int wgmma_producer_ksteps();  // k-steps of the V tile the producer warps write (0: none, one kernel)

// The combine kernel: grid (heads, batch), block 128; args (part_o, part_lse, out, lse,
// heads, splits).
const void* combine_kernel();

// Self-test kernel: dequantizes each of the 256 e4m3 codes through the decode kernel's own K and
// V conversions, times `scale`; out[0..255] = cvt path, out[256..511] = bit-trick path (bf16;
// NaN where the K and V forms disagree). One block of 256.
const void* dequant_selftest_kernel();

}  // namespace abtrack::kernels::mla_decode
