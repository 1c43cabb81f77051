// Device helpers shared by the mma.sync family (mla_decode_kernels.cu) and the wgmma kernel
// (mla_decode_wgmma.cu): cp.async gathers, the SFU exponential, bit casts, softmax constants.
#pragma once

#include "mla_decode_kernels.cuh"

#include <cuda_bf16.h>

#include <cstdint>

namespace abtrack::kernels::mla_decode::dev {

// The row format of format.hpp (C++20, which nvcc here does not compile): 512 e4m3, 4 f32
// scales, 64 bf16 RoPE values per token.
constexpr int kDimQk = 576;
constexpr int kDimV = 512;
constexpr int kTokenBytes = 656;
constexpr int kChunks = kTokenBytes / 16;  // 41 16-byte chunks per token row
constexpr int kHeads = 32;                 // heads per CTA
constexpr float kMinusBig = -1e30f;        // a running maximum before any valid column
constexpr float kRescaleLog2 = 8.0f;       // lazy rescaling threshold (log2 domain): P <= 256

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// src_size 0 reads nothing and writes 16 zero bytes.
__device__ __forceinline__ void cp_async_16_zfill(void* dst, const void* src, int src_size) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_size));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait(int pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::); break;
    default: asm volatile("cp.async.wait_group 3;\n" ::); break;
  }
}

// 2^x by the SFU alone (ex2.approx.ftz: relative error ~2^-22, -inf -> 0), without exp2f's
// denormal fix-up around it.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The work of this CTA: grid (splits, head blocks, batch); tiles t_first .. t_first + n_tiles - 1.
struct CtaWork {
  int split, head0, b, t_first, n_tiles;
};
__device__ __forceinline__ CtaWork cta_work(const KernelParams& p) {
  CtaWork w;
  w.split = blockIdx.x;
  w.head0 = blockIdx.y * kHeads;
  w.b = blockIdx.z;
  w.t_first = w.split * p.tiles_per_split;
  w.n_tiles = max(0, min(p.tiles, w.t_first + p.tiles_per_split) - w.t_first);
  return w;
}

__device__ __forceinline__ std::uint32_t as_u32(__nv_bfloat162 v) { return *reinterpret_cast<std::uint32_t*>(&v); }
__device__ __forceinline__ __nv_bfloat162 as_bf162(std::uint32_t v) { return *reinterpret_cast<__nv_bfloat162*>(&v); }

}  // namespace abtrack::kernels::mla_decode::dev
