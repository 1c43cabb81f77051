// Sparse MLA FP8 decode on Hopper's asynchronous tensor cores (`--math wgmma`): one CTA of two
// warpgroups and a producer warp per (batch row, 32 heads, split), 64-token tiles, products
// transposed so that the tile's tokens are wgmma's M dimension (64, whatever the number of heads):
//
//   S^T (64 tokens x 32 heads) = K (64 x 576) Q^T      wgmma m64n32k16, A = K, B = Q, both from
//                                                       shared memory, k split between the
//                                                       warpgroups; each then adds the other's
//                                                       partial for its 16 heads (its softmax)
//   O^T (512 x 32 heads)      += V^T (512 x 64) P^T    wgmma m64n32k16, A = V (transposed
//                                                       descriptor), B = P; warpgroup g owns
//                                                       dims 256g..256g+255 (64 registers)
//
// Per tile: the producer warp gathers the rows with bulk copies (TMA, 656 bytes each) into a ring
// of raw stages; the math warps move the RoPE chunks into a K-major core-matrix tile and turn
// the 512 e4m3 values of each token into f16 once, times their group scale, in one f16 tile in
// the core-matrix layout, which serves as K for S^T and as V for O^T. f16, not bf16: the bit
// trick gives e4m3 -> f16 (value * 2^-8) in 5 integer instructions per 4 values and the scale
// (* 2^8) is one f16x2 multiply, rounded once; Q is scaled per head row by a power of two into
// f16's range (undone in the softmax). RoPE products stay bf16. Design and measurements:
// docs/mla-decode-kernels.md, session 4.
#include "mla_decode_kernels.cuh"
#include "mla_decode_device.cuh"

#include <cuda_fp16.h>

#ifdef ABTRACK_WGMMA_PHASES
#include <cstdio>
#endif

namespace abtrack::kernels::mla_decode {

namespace {

using namespace dev;

constexpr int kTile = 64;                          // tokens per tile: wgmma's M
constexpr int kMathThreads = 256;                  // two warpgroups: conversion, wgmma, softmax
constexpr int kThreads = kMathThreads + 32;        // and one producer warp: the gathers
constexpr int kStageBytes = kTile * kTokenBytes;   // one raw tile, row-major [64 tokens][656 B]
constexpr int kRopeOffset = 528;                   // bytes 0..511 e4m3, 512..527 scales, 528..655 RoPE
constexpr int kKvBytes = kTile * kDimV * 2;        // f16 K/V tile (also the epilogue's O staging)
constexpr int kQnBytes = kHeads * kDimV * 2;       // f16 Q (512 dims)
constexpr int kQrBytes = kHeads * (kDimQk - kDimV) * 2;  // bf16 Q RoPE
constexpr int kPBytes = kHeads * kTile * 2;        // f16 P
constexpr int kRopeBytes = 8 * kTile * 16;         // the tile's RoPE chunks, copied out of the ring

// Named barriers (0 is __syncthreads): per warpgroup, the math warps, and per ring slot s
// "empty" (the math warps arrive once they have read it; the producer waits before refilling).
// A slot's arrival is an mbarrier (the bulk copies complete it).
constexpr int kBarMath = 3;
constexpr int kBarEmpty = 4;  // + slot (stages <= 2)

// Shared memory matrix descriptor without swizzling (core matrices of 8 rows x 16 bytes, each
// 128 contiguous bytes): start address, leading and stride byte offsets, all in 16-byte units.
// Built once per operand; a byte offset within the operand is then one add to the address
// field (`at`), which never carries out of it (shared memory ends below 2^18 bytes).
__device__ __forceinline__ std::uint64_t smem_desc(const void* p, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((smem_addr(p) & 0x3ffffu) >> 4) | (static_cast<std::uint64_t>(lbo >> 4) << 16) |
         (static_cast<std::uint64_t>(sbo >> 4) << 32);
}
__device__ __forceinline__ std::uint64_t at(std::uint64_t desc, std::uint32_t byte_offset) { return desc + (byte_offset >> 4); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Generic-proxy stores to shared memory become visible to wgmma (the async proxy).
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Barrier `id` (1 or 2) among the 128 threads of one warpgroup.
__device__ __forceinline__ void warpgroup_barrier(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// mbarriers: one arrival (the producer's, announcing the bytes to expect) and the bulk copies'
// transaction bytes complete a phase.
__device__ __forceinline__ void mbar_init(std::uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// One token row (656 bytes) global -> shared by the bulk-copy (TMA) engine, completing on `bar`.
__device__ __forceinline__ void bulk_copy_row(void* dst, const void* src, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_addr(dst)),
      "l"(src), "n"(kTokenBytes), "r"(smem_addr(bar))
      : "memory");
}

// d (64 x 32, f32) += A (64 x 16) * B (16 x 32, K-major): A K-major (kTransA 0) or M-major (1).
#define ABTRACK_WGMMA_N32(TYPE, TRANS_A)                                                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                 \
               "wgmma.mma_async.sync.aligned.m64n32k16.f32." TYPE "." TYPE                                  \
               " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, " TRANS_A     \
               ", 0;\n}\n"                                                                                 \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),           \
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),        \
                 "+f"(d[14]), "+f"(d[15])                                                                   \
               : "l"(a), "l"(b))
__device__ __forceinline__ void wgmma_n32_f16(float (&d)[16], std::uint64_t a, std::uint64_t b) {
  ABTRACK_WGMMA_N32("f16", "0");
}
__device__ __forceinline__ void wgmma_n32_bf16(float (&d)[16], std::uint64_t a, std::uint64_t b) {
  ABTRACK_WGMMA_N32("bf16", "0");
}
__device__ __forceinline__ void wgmma_n32_ta_f16(float (&d)[16], std::uint64_t a, std::uint64_t b) {
  ABTRACK_WGMMA_N32("f16", "1");
}
#undef ABTRACK_WGMMA_N32

// The f16 tiles keep each group of 4 dims as (d0, d2, d1, d3): the order the bit trick produces
// them in. sigma maps a stored position to its dim (and back: it swaps bits 0 and 1).
__device__ __forceinline__ int sigma(int pos) { return (pos & ~3) | ((pos & 1) << 1) | ((pos >> 1) & 1); }

// Four e4m3 values (one word) as f16 * 2^-8, exact, subnormals included: the even bytes (dims 0,
// 2) and the odd bytes (dims 1, 3) as two f16x2 words.
__device__ __forceinline__ void e4m3x4_to_f16(std::uint32_t w, std::uint32_t& even, std::uint32_t& odd) {
  even = ((w << 8) & 0x80008000u) | ((w << 7) & 0x3f803f80u);
  odd = (w & 0x80008000u) | ((w >> 1) & 0x3f803f80u);
}
__device__ __forceinline__ std::uint32_t hmul2_u32(std::uint32_t a, __half2 s) {
  __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), s);
  return *reinterpret_cast<std::uint32_t*>(&r);
}

// Diagnostic build only (-DABTRACK_WGMMA_PHASES, tools/diag.sh): clock64 time per phase of
// the tile loop, summed over tiles and printed by thread 0 of each warpgroup of CTA (0, 0, 0).
#ifdef ABTRACK_WGMMA_PHASES
__device__ long long g_wgmma_phases[2][9];  // (a printf in the kernel would serialize its wgmma)
#define ABTRACK_PHASE(i)                 \
  {                                      \
    const long long now_ = clock64();    \
    phase_[i] += now_ - phase_t_;        \
    phase_t_ = now_;                     \
  }
#else
#define ABTRACK_PHASE(i)
#endif

__global__ void __launch_bounds__(kThreads, 1) decode_wgmma_impl(const KernelParams p) {
#ifdef ABTRACK_WGMMA_PHASES
  long long phase_[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  long long phase_t_ = clock64();
#endif
  extern __shared__ __align__(128) std::uint8_t smem[];
  // f16 K/V tile: core matrix (dim block db of 8 positions, token block tb of 8) at
  // (db * 8 + tb) * 128, token row (t % 8) * 16: K-major for S^T (M = tokens), M-major for O^T.
  std::uint8_t* kv_s = smem;
  std::uint8_t* qn_s = kv_s + kKvBytes;  // Q * c_h, f16: (db * 4 + head block) * 128, K-major
  std::uint8_t* qr_s = qn_s + kQnBytes;  // Q RoPE * c_h, bf16: (rope block * 4 + head block) * 128
  std::uint8_t* p_s = qr_s + kQrBytes;   // P, f16: (token block * 4 + head block) * 128, K-major
  std::uint8_t* rope_s = p_s + kPBytes;  // [8 chunks][64 tokens][16 B]: K-major bf16 RoPE
  float* xchg_s = reinterpret_cast<float*>(rope_s + kRopeBytes);  // [2 wg][8][128] S^T partials
  std::uint8_t* ring = reinterpret_cast<std::uint8_t*>(xchg_s + 2 * 8 * 128);  // stages x [64 tokens][656 B]
  float* red_s = reinterpret_cast<float*>(ring + p.stages * kStageBytes);  // [2][4 warps][16 heads]
  float* alpha_s = red_s + 2 * 4 * 16;                                      // [32]
  float* m_s = alpha_s + kHeads;                                            // [32]
  float* l_s = m_s + kHeads;                                                // [32]
  float* qinv_s = l_s + kHeads;                                             // [32] 1 / c_h
  std::uint64_t* full_s = reinterpret_cast<std::uint64_t*>(qinv_s + kHeads);  // [2] ring slots landed
  std::int32_t* idx_s = reinterpret_cast<std::int32_t*>(full_s + 2);

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int wg = warp >> 2;  // warpgroup
  const int wl = warp & 3;   // warp within the warpgroup: accumulator rows 16 wl .. 16 wl + 15
  const int g = lane >> 2;
  const int t4 = lane & 3;
  const auto [split, head0, b, t_first, n_tiles] = cta_work(p);
  const int stages = p.stages;

  // The split's indices (-1 past topk), four loads in flight per thread.
  for (int j0 = tid; j0 < n_tiles * kTile; j0 += 4 * kThreads) {
    int v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int j = j0 + u * kThreads, slot = t_first * kTile + j;
      v[u] = j < n_tiles * kTile && slot < p.topk ? __ldg(&p.indices[static_cast<std::size_t>(b) * p.topk + slot]) : -1;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (j0 + u * kThreads < n_tiles * kTile) idx_s[j0 + u * kThreads] = v[u];
  }
  if (tid < stages) mbar_init(&full_s[tid]);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  __syncthreads();

  // The producer warp: tile i's rows go to ring slot i % stages by bulk copies (one 656-byte copy
  // per valid row; lane l does rows l and l + 32), which complete the slot's mbarrier; invalid
  // rows (-1) are zero-filled by plain stores before the arrival that announces the bytes. A
  // slot is refilled as soon as the math warps have converted it, so `stages` tiles stay in flight.
  if (warp == kMathThreads / 32) {
    int slot = 0;
    for (int i = 0; i < n_tiles; ++i) {
      if (i >= stages) named_sync(kBarEmpty + slot, kThreads);  // tile i - stages is converted
      std::uint8_t* dst = ring + slot * kStageBytes;
      const int id[2] = {idx_s[i * kTile + lane], idx_s[i * kTile + 32 + lane]};
      const std::uint32_t valid = __popc(__ballot_sync(0xffffffffu, id[0] >= 0)) + __popc(__ballot_sync(0xffffffffu, id[1] >= 0));
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (id[r] < 0)
          for (int c = 0; c < kChunks; ++c)
            *reinterpret_cast<uint4*>(dst + (lane + 32 * r) * kTokenBytes + 16 * c) = make_uint4(0, 0, 0, 0);
      __syncwarp();
      if (lane == 0) mbar_expect(&full_s[slot], valid * kTokenBytes);
      __syncwarp();
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (id[r] >= 0)
          bulk_copy_row(dst + (lane + 32 * r) * kTokenBytes, p.pool + static_cast<std::size_t>(id[r]) * kTokenBytes,
                        &full_s[slot]);
      slot = slot + 1 == stages ? 0 : slot + 1;
    }
    return;
  }

  // Q while the first tiles land: each head row times c_h = 2^(15 - e), max|q| < 2^e, so the
  // row's largest value lies in [2^14, 2^15) (f16's range, full precision); zero rows past `heads`.
  // A warp does 4 rows; lane l converts 8-dim chunks l and l + 32 (and RoPE chunk l < 8).
  // (All 12 loads first: one row at a time, each row waited for its loads.)
  uint4 qc[4][3];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int h = warp * 4 + r;
    const __nv_bfloat16* q = p.q + (static_cast<std::size_t>(b) * p.heads + head0 + h) * kDimQk;
    const bool real = head0 + h < p.heads;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    qc[r][0] = real ? __ldg(reinterpret_cast<const uint4*>(q) + lane) : zero;
    qc[r][1] = real ? __ldg(reinterpret_cast<const uint4*>(q) + lane + 32) : zero;
    qc[r][2] = real && lane < 8 ? __ldg(reinterpret_cast<const uint4*>(q + kDimV) + lane) : zero;
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int h = warp * 4 + r;
    const uint4 (&c)[3] = qc[r];
    float big = 0.0f;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t w[4] = {c[k].x, c[k].y, c[k].z, c[k].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(as_bf162(w[i]));
        big = fmaxf(big, fmaxf(fabsf(f.x), fabsf(f.y)));
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, o));
    int e = 0;
    frexpf(big, &e);
    const float cs = big > 0.0f && isfinite(big) ? ldexpf(1.0f, 15 - e) : 1.0f;
    if (lane == 0) qinv_s[h] = 1.0f / cs;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int ch = lane + 32 * k;  // dims 8 ch .. 8 ch + 7, stored as (0, 2, 1, 3, 4, 6, 5, 7)
      const std::uint32_t w[4] = {c[k].x, c[k].y, c[k].z, c[k].w};
      float v[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(as_bf162(w[i]));
        v[2 * i] = f.x * cs;
        v[2 * i + 1] = f.y * cs;
      }
      __half2 hv[4] = {__floats2half2_rn(v[0], v[2]), __floats2half2_rn(v[1], v[3]), __floats2half2_rn(v[4], v[6]),
                       __floats2half2_rn(v[5], v[7])};
      *reinterpret_cast<uint4*>(qn_s + (ch * 4 + h / 8) * 128 + (h % 8) * 16) = *reinterpret_cast<uint4*>(hv);
    }
    if (lane < 8) {
      const std::uint32_t w[4] = {c[2].x, c[2].y, c[2].z, c[2].w};
      std::uint32_t o[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(as_bf162(w[i]));
        o[i] = as_u32(__floats2bfloat162_rn(f.x * cs, f.y * cs));  // exact: a power of two
      }
      *reinterpret_cast<uint4*>(qr_s + (lane * 4 + h / 8) * 128 + (h % 8) * 16) = make_uint4(o[0], o[1], o[2], o[3]);
    }
  }

  // O^T accumulators of this warpgroup: m-block mb holds positions 256 wg + 64 mb + 16 wl + g
  // (+8), heads 8 j + 2 t4 (+1) at [mb][4 j + {0, 1} (+2 for +8)].
  float oacc[4][16];
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
#pragma unroll
    for (int i = 0; i < 16; ++i) oacc[mb][i] = 0.0f;
  // Softmax state of this thread's 4 S^T columns (heads 16 wg + 8 j + 2 t4 + e, index 2 j + e):
  // the running maximum (the same in every thread of the column) and this thread's share of l.
  float m_run[4], l_part[4], qinv[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    m_run[c] = kMinusBig;
    l_part[c] = 0.0f;
  }
  named_sync(kBarMath, kMathThreads);
#pragma unroll
  for (int c = 0; c < 4; ++c) qinv[c] = qinv_s[16 * wg + 8 * (c >> 1) + 2 * t4 + (c & 1)] * p.scale_log2;

  // The operands' descriptors (no swizzling; leading, stride byte offsets), each at this
  // warpgroup's share: S^T's A = the f16 tile K-major (next 8 dims 1024 B, next 8 tokens 128 B;
  // dims 256 wg ..), B = Q K-major (next 8 dims 512, next 8 heads 128); RoPE A = the tile's RoPE
  // (next chunk 1024, next 8 tokens 128; chunks 4 wg ..) and Q's; O^T's A = the f16 tile M-major
  // (next 8 tokens 128, next 8 dims 1024; dims 256 wg ..), B = P K-major (next 8 tokens 512,
  // next 8 heads 128).
  const std::uint64_t k_desc = smem_desc(kv_s + wg * 16 * 2048, 1024, 128);
  const std::uint64_t q_desc = smem_desc(qn_s + wg * 16 * 1024, 512, 128);
  const std::uint64_t qr_desc = smem_desc(qr_s + wg * 2 * 1024, 512, 128);
  const std::uint64_t rope_desc = smem_desc(rope_s + wg * 2 * 2048, 1024, 128);
  const std::uint64_t v_desc = smem_desc(kv_s + wg * 4 * 8 * 1024, 128, 1024);
  const std::uint64_t p_desc = smem_desc(p_s, 512, 128);

  int slot = 0;
  std::uint32_t parity = 0;  // of the slots' mbarrier phases, flipped at each pass over the ring
  ABTRACK_PHASE(7);  // prologue
  for (int it = 0; it < n_tiles; ++it) {
    named_sync(kBarMath, kMathThreads);  // every math warp is past O^T of tile it-1
    mbar_wait(&full_s[slot], parity);     // tile it has landed
    ABTRACK_PHASE(0);
    const std::uint8_t* stage = ring + slot * kStageBytes;

    // The f16 K/V tile: thread (token tid % 64, q = tid / 64) converts chunks q, q + 4, ..., q + 28
    // (16 dims each, group c / 8) into the rows of dim blocks 2c and 2c + 1.
    {
      const int t = tid & 63;
      const int q = tid >> 6;
      const std::uint8_t* row_in = stage + t * kTokenBytes;
      const float* scales = reinterpret_cast<const float*>(row_in + kDimV);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int c = q + 4 * k;
        const __half2 s2 = __float2half2_rn(scales[c >> 3] * 256.0f);
        const uint4 w = *reinterpret_cast<const uint4*>(row_in + 16 * c);
        std::uint32_t e0, o0, e1, o1, e2, o2, e3, o3;
        e4m3x4_to_f16(w.x, e0, o0);
        e4m3x4_to_f16(w.y, e1, o1);
        e4m3x4_to_f16(w.z, e2, o2);
        e4m3x4_to_f16(w.w, e3, o3);
        std::uint8_t* row = kv_s + ((2 * c) * 8 + t / 8) * 128 + (t % 8) * 16;
        *reinterpret_cast<uint4*>(row) = make_uint4(hmul2_u32(e0, s2), hmul2_u32(o0, s2), hmul2_u32(e1, s2), hmul2_u32(o1, s2));
        *reinterpret_cast<uint4*>(row + 1024) =
            make_uint4(hmul2_u32(e2, s2), hmul2_u32(o2, s2), hmul2_u32(e3, s2), hmul2_u32(o3, s2));
      }
      // RoPE chunks q and q + 4 move out of the ring (which is refilled before S^T) into the
      // K-major core-matrix layout: chunk r of token t at (r * 64 + t) * 16.
      *reinterpret_cast<uint4*>(rope_s + (q * kTile + t) * 16) = *reinterpret_cast<const uint4*>(row_in + kRopeOffset + 16 * q);
      *reinterpret_cast<uint4*>(rope_s + ((q + 4) * kTile + t) * 16) =
          *reinterpret_cast<const uint4*>(row_in + kRopeOffset + 16 * (q + 4));
    }
    named_arrive(kBarEmpty + slot, kThreads);
    slot = slot + 1 == stages ? 0 : slot + 1;
    parity ^= slot == 0 ? 1u : 0u;
    ABTRACK_PHASE(1);
    fence_async_smem();
    named_sync(kBarMath, kMathThreads);
    ABTRACK_PHASE(2);

    // S^T split over k between the warpgroups, all 32 heads each (every operand byte is read
    // from shared memory once: split over heads, both read all of K): warpgroup w the f16
    // k-steps 16 w .. 16 w + 15 and the bf16 RoPE steps 2 w, 2 w + 1 (the same instruction
    // stream for both: a branch around wgmma serializes it). Each then keeps its 16
    // heads (accumulator n-tiles 2 wg, 2 wg + 1) and adds the other's partial for them, swapped
    // through shared memory in accumulator order (the same thread of the other warpgroup holds
    // the same rows and columns).
    float sfull[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) sfull[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) wgmma_n32_f16(sfull, at(k_desc, kk * 2048), at(q_desc, kk * 1024));
#pragma unroll
    for (int r = 0; r < 2; ++r) wgmma_n32_bf16(sfull, at(rope_desc, r * 2048), at(qr_desc, r * 1024));
    wgmma_commit();
    wgmma_wait_all();
    const int wt = tid & 127;
#pragma unroll
    for (int i = 0; i < 8; ++i) xchg_s[(wg * 8 + i) * 128 + wt] = wg ? sfull[i] : sfull[8 + i];
    named_sync(kBarMath, kMathThreads);
    float sacc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) sacc[i] = (wg ? sfull[8 + i] : sfull[i]) + xchg_s[((1 - wg) * 8 + i) * 128 + wt];
    ABTRACK_PHASE(3);

    // Online softmax over the tile's 64 tokens (rows) for each of the 16 heads (columns): a
    // thread holds rows 16 wl + g and + 8 of columns 8 j + 2 t4 + e; the column maximum is
    // reduced over g by shuffles and over the 4 warps in shared memory. l is kept per thread
    // and reduced once, in the epilogue.
    {
      const std::int32_t* tile_idx = idx_s + it * kTile;
      const int r0 = 16 * wl + g;
      const bool v0 = tile_idx[r0] >= 0, v1 = tile_idx[r0 + 8] >= 0;
      float x[8], cmax[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = c >> 1, e = c & 1;
        x[4 * j + e] = v0 ? sacc[4 * j + e] * qinv[c] : -INFINITY;
        x[4 * j + 2 + e] = v1 ? sacc[4 * j + 2 + e] * qinv[c] : -INFINITY;
        cmax[c] = fmaxf(x[4 * j + e], x[4 * j + 2 + e]);
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) cmax[c] = fmaxf(cmax[c], __shfl_xor_sync(0xffffffffu, cmax[c], o));
        if (g == 0) red_s[(wg * 4 + wl) * 16 + 8 * j + 2 * t4 + e] = cmax[c];
      }
      warpgroup_barrier(1 + wg);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = c >> 1, e = c & 1;
        const int col = 8 * j + 2 * t4 + e;
        float tmax = red_s[(wg * 4) * 16 + col];
#pragma unroll
        for (int w = 1; w < 4; ++w) tmax = fmaxf(tmax, red_s[(wg * 4 + w) * 16 + col]);
        // Lazy rescaling as in the mma kernels: the maximum moves only by more than 2^8.
        const float m_new = tmax > m_run[c] + kRescaleLog2 ? tmax : m_run[c];
        const float alpha = m_new == m_run[c] ? 1.0f : fast_exp2(m_run[c] - m_new);
        const float p0 = fast_exp2(x[4 * j + e] - m_new);
        const float p1 = fast_exp2(x[4 * j + 2 + e] - m_new);
        l_part[c] = l_part[c] * alpha + p0 + p1;
        m_run[c] = m_new;
        const int head = 16 * wg + col;
        __half* pcol = reinterpret_cast<__half*>(p_s + (head >> 3) * 128 + (head & 7) * 16);
        pcol[(r0 >> 3) * 256 + (r0 & 7)] = __float2half_rn(p0);
        pcol[((r0 + 8) >> 3) * 256 + (r0 & 7)] = __float2half_rn(p1);
        if (wl == 0 && g == 0) alpha_s[head] = alpha;
      }
    }
    ABTRACK_PHASE(4);
    fence_async_smem();
    named_sync(kBarMath, kMathThreads);  // P and alpha complete
    ABTRACK_PHASE(5);

    // O^T = O^T * alpha + V^T P^T for this warpgroup's 256 dims (4 m-blocks x 4 k-steps).
    {
      float al[8];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        al[2 * j] = alpha_s[8 * j + 2 * t4];
        al[2 * j + 1] = alpha_s[8 * j + 2 * t4 + 1];
      }
      bool ones = true;
#pragma unroll
      for (int i = 0; i < 8; ++i) ones = ones && al[i] == 1.0f;
      if (!__all_sync(0xffffffffu, ones)) {
#pragma unroll
        for (int mb = 0; mb < 4; ++mb)
#pragma unroll
          for (int i = 0; i < 16; ++i) oacc[mb][i] *= al[2 * (i >> 2) + (i & 1)];
      }
      wgmma_fence();
#pragma unroll
      for (int mb = 0; mb < 4; ++mb)
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) wgmma_n32_ta_f16(oacc[mb], at(v_desc, mb * 8 * 1024 + ks * 256), at(p_desc, ks * 1024));
      wgmma_commit();
      wgmma_wait_all();
    }
    ABTRACK_PHASE(6);
  }
#ifdef ABTRACK_WGMMA_PHASES
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && (tid & 127) == 0) {
    for (int i = 0; i < 8; ++i) g_wgmma_phases[wg][i] = phase_[i];
    g_wgmma_phases[wg][8] = n_tiles;
  }
#endif

  // Epilogue: l reduced over rows (g by shuffles, warps in shared memory), then O^T staged in
  // the K/V tile's place as f32 [head][dim], then written row by row (16-byte stores).
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) l_part[c] += __shfl_xor_sync(0xffffffffu, l_part[c], o);
  named_sync(kBarMath, kMathThreads);  // every math warp is done with red_s and the K/V tile
  if (g == 0) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int col = 8 * (c >> 1) + 2 * t4 + (c & 1);
      red_s[(wg * 4 + wl) * 16 + col] = l_part[c];
      if (wl == 0) m_s[16 * wg + col] = m_run[c];
    }
  }
  float* o_stage = reinterpret_cast<float*>(kv_s);
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int pos = (wg * 4 + mb) * 64 + 16 * wl + g + ((i & 2) ? 8 : 0);
      const int head = 8 * (i >> 2) + 2 * t4 + (i & 1);
      o_stage[head * kDimV + sigma(pos)] = oacc[mb][i];
    }
  named_sync(kBarMath, kMathThreads);
  if (tid < kHeads) {
    const int wgh = tid >> 4, col = tid & 15;
    float l = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; ++w) l += red_s[(wgh * 4 + w) * 16 + col];
    l_s[tid] = l;
    if (head0 + tid < p.heads) {
      const float lse2 = m_s[tid] + log2f(l);
      const std::size_t bh = static_cast<std::size_t>(b) * p.heads + head0 + tid;
      if (p.splits == 1)
        p.lse[bh] = l > 0.0f ? lse2 * 0.69314718055994531f : INFINITY;
      else
        p.part_lse[(static_cast<std::size_t>(b) * p.splits + split) * p.heads + head0 + tid] = l > 0.0f ? lse2 : -INFINITY;
    }
  }
  named_sync(kBarMath, kMathThreads);
  for (int k = tid; k < kHeads * (kDimV / 8); k += kMathThreads) {
    const int h = k / (kDimV / 8);
    const int col = (k % (kDimV / 8)) * 8;
    if (head0 + h >= p.heads) continue;
    const float l = l_s[h];
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const float4 a = *reinterpret_cast<const float4*>(o_stage + h * kDimV + col);
    const float4 c = *reinterpret_cast<const float4*>(o_stage + h * kDimV + col + 4);
    if (p.splits == 1) {
      const std::size_t orow = static_cast<std::size_t>(b) * p.heads + head0 + h;
      *reinterpret_cast<uint4*>(p.out + orow * kDimV + col) =
          make_uint4(as_u32(__floats2bfloat162_rn(a.x * inv, a.y * inv)), as_u32(__floats2bfloat162_rn(a.z * inv, a.w * inv)),
                     as_u32(__floats2bfloat162_rn(c.x * inv, c.y * inv)), as_u32(__floats2bfloat162_rn(c.z * inv, c.w * inv)));
    } else {
      const std::size_t orow = (static_cast<std::size_t>(b) * p.splits + split) * p.heads + head0 + h;
      float4* dst = reinterpret_cast<float4*>(p.part_o + orow * kDimV + col);
      dst[0] = make_float4(a.x * inv, a.y * inv, a.z * inv, a.w * inv);
      dst[1] = make_float4(c.x * inv, c.y * inv, c.z * inv, c.w * inv);
    }
  }
}

}  // namespace

const void* decode_kernel_wgmma() { return reinterpret_cast<const void*>(&decode_wgmma_impl); }

#ifdef ABTRACK_WGMMA_PHASES
void print_wgmma_phases() {
  long long ph[2][9] = {};
  if (cudaMemcpyFromSymbol(ph, g_wgmma_phases, sizeof ph) != cudaSuccess) return;
  for (int wg = 0; wg < 2; ++wg)
    std::fprintf(stderr,
                 "wgmma phases (cycles, %lld tiles, warpgroup %d): prologue %lld | wait+B1 %lld  dequant %lld  B2 %lld  "
                 "S^T %lld  softmax %lld  B3 %lld  refill+O^T %lld\n",
                 ph[wg][8], wg, ph[wg][7], ph[wg][0], ph[wg][1], ph[wg][2], ph[wg][3], ph[wg][4], ph[wg][5], ph[wg][6]);
}
#endif

}  // namespace abtrack::kernels::mla_decode
