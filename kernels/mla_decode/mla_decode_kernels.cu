// Sparse MLA FP8 decode for Hopper (sm_90): one CTA per (batch row, 32 heads, split).
// Per tile of T gathered tokens: 16-byte cp.async gathers into a ring of `stages` raw buffers
// (all of them in flight while a tile is computed),
// dequant to a bf16 tile in shared memory, S = Q K^T (mma.sync m16n8k16, f32 accumulate; warps
// split into 2 n-groups x warps/2 k parts, partial S tiles written into the consumed raw slot),
// online softmax in the log2 domain, O += P V (mma.sync, V via ldmatrix.trans).
#include "mla_decode_kernels.cuh"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace abtrack::kernels::mla_decode {

namespace {

constexpr int kDimQk = 576;
constexpr int kDimV = 512;
constexpr int kTokenBytes = 656;
constexpr int kChunks = kTokenBytes / 16;  // 41 16-byte chunks per token row
constexpr int kRowBytes = (kDimQk + 8) * 2;  // padded bf16 row: 1168 B (conflict-free ldmatrix)
constexpr int kHeads = 32;                   // heads per CTA
constexpr float kMinusBig = -1e30f;

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
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

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// d += a * b, m16n8k16, bf16 inputs, f32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ std::uint32_t as_u32(__nv_bfloat162 v) {
  return *reinterpret_cast<std::uint32_t*>(&v);
}
__device__ __forceinline__ __nv_bfloat162 as_bf162(std::uint32_t v) {
  return *reinterpret_cast<__nv_bfloat162*>(&v);
}

// cvt chain: two e4m3 -> f16x2 (cvt.rn.f16x2.e4m3x2) -> f32 -> * scale -> bf16x2.
__device__ __forceinline__ std::uint32_t dequant2_cvt(std::uint16_t two, float scale) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  return as_u32(__floats2bfloat162_rn(f.x * scale, f.y * scale));
}

// Bit trick: place each byte's sign at bit 15 and exponent|mantissa at bits 4..10 of a bf16
// (an exponent bias of 127 instead of 7, subnormals included), then one bf16x2 multiply by
// scale * 2^120 (exact: powers of two). Four bytes -> two bf16x2 in natural order.
__device__ __forceinline__ void dequant4_bits(std::uint32_t w, __nv_bfloat162 scale2, std::uint32_t& lo,
                                              std::uint32_t& hi) {
  const std::uint32_t odd = (w & 0x80008000u) | ((w & 0x7f007f00u) >> 4);   // bytes 1, 3
  const std::uint32_t w8 = w << 8;
  const std::uint32_t even = (w8 & 0x80008000u) | ((w8 & 0x7f007f00u) >> 4);  // bytes 0, 2
  const std::uint32_t e = as_u32(__hmul2(as_bf162(even), scale2));
  const std::uint32_t o = as_u32(__hmul2(as_bf162(odd), scale2));
  lo = __byte_perm(e, o, 0x5410);
  hi = __byte_perm(e, o, 0x7632);
}

__device__ __forceinline__ uint4 dequant8(uint2 raw, float scale, bool bits) {
  uint4 r;
  if (bits) {
    const __nv_bfloat162 s2 = __float2bfloat162_rn(scale * 0x1.0p120f);
    dequant4_bits(raw.x, s2, r.x, r.y);
    dequant4_bits(raw.y, s2, r.z, r.w);
  } else {
    r.x = dequant2_cvt(static_cast<std::uint16_t>(raw.x & 0xffffu), scale);
    r.y = dequant2_cvt(static_cast<std::uint16_t>(raw.x >> 16), scale);
    r.z = dequant2_cvt(static_cast<std::uint16_t>(raw.y & 0xffffu), scale);
    r.w = dequant2_cvt(static_cast<std::uint16_t>(raw.y >> 16), scale);
  }
  return r;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int W, int T>
struct Layout {
  static constexpr int kThreads = W * 32;
  // S = Q K^T: a warp owns both m-tiles (all 32 heads) and kNTW n-tiles (8 tokens each) of one of
  // two n-groups, over 36 / kKSplit of the k16 steps; the kKSplit partial S tiles are summed by
  // the softmax. Per k step a warp loads 2 A (ldmatrix x4) + kNTW/2 B (x4) for 2 * kNTW mma.
  static constexpr int kNT = T / 8;                                     // n-tiles of S
  static constexpr int kNGroups = 2;
  static constexpr int kNTW = kNT / kNGroups;                           // n-tiles per warp: 1, 2, 4
  static constexpr int kKSplit = W / kNGroups;                          // 2 (4 warps) or 4 (8 warps)
  static constexpr int kKSteps = (kDimQk / 16) / kKSplit;               // k16 steps per warp: 18 or 9
  static constexpr int kSStride = T + 4;                                // floats
  static constexpr int kPStride = T + 8;                                // bf16
  static constexpr int kRowsPerWarp = kHeads / W;                       // softmax rows per warp
  static constexpr int kPasses = kRowsPerWarp / 4;                      // 4 rows (8 lanes each) per pass
  static constexpr int kCols = kDimV / W;                               // PV columns per warp
  static constexpr int kNTiles = kCols / 8;
  static_assert(kKSplit * kKSteps * 16 == kDimQk, "k steps split evenly over warps");
  static_assert(kNTW * kNGroups == kNT, "n-tiles split evenly over n-groups");
  static_assert(kNTiles % 2 == 0, "PV n-tiles come in pairs");
  // The partial S tiles live in the raw ring slot of the tile being computed (consumed by then).
  static_assert(kKSplit * kHeads * kSStride * 4 <= T * kTokenBytes, "S partials fit a raw slot");
};

template <int W, int T>
// 8 warps: cap registers at 128 so that two CTAs can share an SM when shared memory allows.
__global__ void __launch_bounds__(W * 32, W == 8 ? 2 : 1) decode_kernel_impl(const KernelParams p) {
  using L = Layout<W, T>;
  extern __shared__ __align__(128) std::uint8_t smem[];
  std::uint8_t* q_s = smem;
  std::uint8_t* k_s = q_s + kHeads * kRowBytes;
  std::uint8_t* raw_s = k_s + T * kRowBytes;
  __nv_bfloat16* p_s = reinterpret_cast<__nv_bfloat16*>(raw_s + p.stages * T * kTokenBytes);
  float* alpha_s = reinterpret_cast<float*>(p_s + kHeads * L::kPStride);
  float* m_s = alpha_s + kHeads;
  float* l_s = m_s + kHeads;
  std::int32_t* idx_s = reinterpret_cast<std::int32_t*>(l_s + kHeads);

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;  // mma groupID
  const int t4 = lane & 3;  // mma thread in group
  const int split = blockIdx.x;
  const int head0 = blockIdx.y * kHeads;
  const int b = blockIdx.z;
  const int t_first = split * p.tiles_per_split;
  const int t_last = min(p.tiles, t_first + p.tiles_per_split);
  const int n_tiles = max(0, t_last - t_first);
  const int stages = p.stages;

  // Prologue: the split's indices (-1 past topk) and the 32 query rows (zero past `heads`).
  for (int j = tid; j < n_tiles * T; j += L::kThreads) {
    const int slot = t_first * T + j;
    idx_s[j] = slot < p.topk ? __ldg(&p.indices[static_cast<std::size_t>(b) * p.topk + slot]) : -1;
  }
  for (int c = tid; c < kHeads * (kDimQk * 2 / 16); c += L::kThreads) {
    const int row = c / (kDimQk * 2 / 16);
    const int part = c % (kDimQk * 2 / 16);
    uint4 v = make_uint4(0, 0, 0, 0);
    if (head0 + row < p.heads)
      v = __ldg(reinterpret_cast<const uint4*>(p.q + (static_cast<std::size_t>(b) * p.heads + head0 + row) * kDimQk) + part);
    *reinterpret_cast<uint4*>(q_s + row * kRowBytes + part * 16) = v;
  }
  __syncthreads();

  auto issue = [&](int tile) {
    std::uint8_t* dst = raw_s + (tile % stages) * T * kTokenBytes;
#pragma unroll 4
    for (int c = tid; c < T * kChunks; c += L::kThreads) {
      const int tok = c / kChunks;
      const int part = c - tok * kChunks;
      const int id = idx_s[tile * T + tok];
      if (id >= 0)
        cp_async_16(dst + tok * kTokenBytes + part * 16,
                    p.pool + static_cast<std::size_t>(id) * kTokenBytes + part * 16);
    }
  };
  // Ring of `stages` raw buffers, all in flight: tiles 0..stages-1 now, tile it+stages into slot
  // it % stages as soon as tile it is done with that slot (dequant, then the partial S tiles of
  // QK^T, which reuse the slot, read by the softmax).
  for (int j = 0; j < stages; ++j) {
    if (j < n_tiles) issue(j);
    cp_async_commit();
  }

  // PV accumulators: rows (mt*16 + g, +8), columns warp*kCols + nt*8 + 2*t4 (+1).
  float acc[2][L::kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < L::kNTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;
  float m_run[L::kPasses], l_run[L::kPasses];  // this lane's softmax row in each pass
#pragma unroll
  for (int i = 0; i < L::kPasses; ++i) {
    m_run[i] = kMinusBig;
    l_run[i] = 0.0f;
  }
  const bool bits = p.dequant_bits != 0;
  const bool fma_math = p.math_fma != 0;
  const int col0 = warp * L::kCols;

  for (int it = 0; it < n_tiles; ++it) {
    cp_async_wait(stages - 1);  // this thread's copies of tile `it` have landed
    __syncthreads();  // ... and everyone's; the previous PV is done with k_s

    // Dequant the raw tile into the bf16 K/V tile; invalid slots become zero rows.
    const std::uint8_t* raw = raw_s + (it % stages) * T * kTokenBytes;
    const std::int32_t* tile_idx = idx_s + it * T;
#pragma unroll
    for (int c = tid; c < T * 32; c += L::kThreads) {
      const int tok = c >> 5;
      const int part = c & 31;  // 16 e4m3 values
      uint4 v0 = make_uint4(0, 0, 0, 0), v1 = v0;
      if (tile_idx[tok] >= 0) {
        const std::uint8_t* row = raw + tok * kTokenBytes;
        const uint4 r = *reinterpret_cast<const uint4*>(row + part * 16);
        const float scale = *reinterpret_cast<const float*>(row + 512 + (part >> 3) * 4);
        v0 = dequant8(make_uint2(r.x, r.y), scale, bits);
        v1 = dequant8(make_uint2(r.z, r.w), scale, bits);
      }
      uint4* dst = reinterpret_cast<uint4*>(k_s + tok * kRowBytes + part * 32);
      dst[0] = v0;
      dst[1] = v1;
    }
#pragma unroll
    for (int c = tid; c < T * 8; c += L::kThreads) {
      const int tok = c >> 3;
      const int part = c & 7;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (tile_idx[tok] >= 0) v = *reinterpret_cast<const uint4*>(raw + tok * kTokenBytes + 528 + part * 16);
      *reinterpret_cast<uint4*>(k_s + tok * kRowBytes + 1024 + part * 16) = v;
    }
    __syncthreads();  // the K tile is complete; the raw slot of tile `it` now holds the S partials
    float* s_s = reinterpret_cast<float*>(raw_s + (it % stages) * T * kTokenBytes);

    // S = Q K^T: warp = (n-group ng, k part kp); 2 m-tiles x kNTW n-tiles over kKSteps k16 steps.
    {
      const int ng = warp & 1;
      const int kp = warp >> 1;
      const int nt0 = ng * L::kNTW;
      const int ks0 = kp * L::kKSteps;
      float sacc[2][L::kNTW][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int j = 0; j < L::kNTW; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) sacc[mt][j][i] = 0.0f;
      if (!fma_math) {
        const std::uint8_t* a_base = q_s + (lane & 15) * kRowBytes + (lane >> 4) * 16 + ks0 * 32;
        // x4: matrices (nt, k lo), (nt, k hi), (nt+1, k lo), (nt+1, k hi); x2: lanes 0..15 only.
        const std::uint8_t* b_base =
            k_s + (nt0 * 8 + (lane & 7) + (L::kNTW >= 2 ? (lane >> 4) * 8 : 0)) * kRowBytes +
            ((lane >> 3) & 1) * 16 + ks0 * 32;
#pragma unroll 3
        for (int ks = 0; ks < L::kKSteps; ++ks) {
          std::uint32_t a[2][4];
          ldmatrix_x4(a[0], a_base + ks * 32);
          ldmatrix_x4(a[1], a_base + 16 * kRowBytes + ks * 32);
          if constexpr (L::kNTW >= 2) {
#pragma unroll
            for (int jp = 0; jp < L::kNTW / 2; ++jp) {
              std::uint32_t bf[4];
              ldmatrix_x4(bf, b_base + jp * 16 * kRowBytes + ks * 32);
#pragma unroll
              for (int mt = 0; mt < 2; ++mt) {
                mma_bf16(sacc[mt][2 * jp], a[mt], bf[0], bf[1]);
                mma_bf16(sacc[mt][2 * jp + 1], a[mt], bf[2], bf[3]);
              }
            }
          } else {
            std::uint32_t bf[2];
            ldmatrix_x2(bf, b_base + ks * 32);
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) mma_bf16(sacc[mt][0], a[mt], bf[0], bf[1]);
          }
        }
      } else {
        for (int d = ks0 * 16; d < (ks0 + L::kKSteps) * 16; d += 2) {
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            const std::uint8_t* q0 = q_s + (mt * 16 + g) * kRowBytes + d * 2;
            const float2 a0 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(q0));
            const float2 a1 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(q0 + 8 * kRowBytes));
#pragma unroll
            for (int j = 0; j < L::kNTW; ++j) {
              const std::uint8_t* k0 = k_s + ((nt0 + j) * 8 + 2 * t4) * kRowBytes + d * 2;
              const float2 b0 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(k0));
              const float2 b1 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(k0 + kRowBytes));
              sacc[mt][j][0] = fmaf(a0.x, b0.x, fmaf(a0.y, b0.y, sacc[mt][j][0]));
              sacc[mt][j][1] = fmaf(a0.x, b1.x, fmaf(a0.y, b1.y, sacc[mt][j][1]));
              sacc[mt][j][2] = fmaf(a1.x, b0.x, fmaf(a1.y, b0.y, sacc[mt][j][2]));
              sacc[mt][j][3] = fmaf(a1.x, b1.x, fmaf(a1.y, b1.y, sacc[mt][j][3]));
            }
          }
        }
      }
      float* s_part = s_s + kp * kHeads * L::kSStride;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int j = 0; j < L::kNTW; ++j) {
          const int row = mt * 16 + g;
          const int col = (nt0 + j) * 8 + 2 * t4;
          *reinterpret_cast<float2*>(s_part + row * L::kSStride + col) = make_float2(sacc[mt][j][0], sacc[mt][j][1]);
          *reinterpret_cast<float2*>(s_part + (row + 8) * L::kSStride + col) =
              make_float2(sacc[mt][j][2], sacc[mt][j][3]);
        }
    }
    __syncthreads();

    // Online softmax (log2 domain): a warp owns kRowsPerWarp head rows, 8 lanes per row, so
    // four rows are reduced at once (3 shuffles per reduction). l sums the f32 p (FlashMLA's
    // convention); P V uses p rounded to bf16.
#pragma unroll
    for (int pass = 0; pass < L::kPasses; ++pass) {
      const int row = warp * L::kRowsPerWarp + pass * 4 + (lane >> 3);
      const int sl = lane & 7;
      float x[T / 8];
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < T / 8; ++j) {
        const int col = sl + 8 * j;
        x[j] = -INFINITY;
        if (tile_idx[col] >= 0) {
          float sc = 0.0f;
#pragma unroll
          for (int k = 0; k < L::kKSplit; ++k) sc += s_s[(k * kHeads + row) * L::kSStride + col];
          x[j] = sc * p.scale_log2;
        }
        tile_max = fmaxf(tile_max, x[j]);
      }
#pragma unroll
      for (int o = 4; o > 0; o >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
      const float m_new = fmaxf(m_run[pass], tile_max);
      const float alpha = exp2f(m_run[pass] - m_new);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < T / 8; ++j) {
        const float pv = exp2f(x[j] - m_new);
        p_s[row * L::kPStride + sl + 8 * j] = __float2bfloat16_rn(pv);
        sum += pv;
      }
#pragma unroll
      for (int o = 4; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      l_run[pass] = l_run[pass] * alpha + sum;
      m_run[pass] = m_new;
      if (sl == 0) alpha_s[row] = alpha;
    }
    __syncthreads();  // the S partials are consumed: refill the raw slot of tile `it`
    if (it + stages < n_tiles) issue(it + stages);
    cp_async_commit();

    // O = O * alpha + P V over this warp's kCols columns, both m-tiles.
    {
      float al[2][2];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        al[mt][0] = alpha_s[mt * 16 + g];
        al[mt][1] = alpha_s[mt * 16 + g + 8];
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < L::kNTiles; ++nt) {
          acc[mt][nt][0] *= al[mt][0];
          acc[mt][nt][1] *= al[mt][0];
          acc[mt][nt][2] *= al[mt][1];
          acc[mt][nt][3] *= al[mt][1];
        }
      if (!fma_math) {
#pragma unroll
        for (int kk = 0; kk < T / 16; ++kk) {
          std::uint32_t a[2][4];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt)
            ldmatrix_x4(a[mt], p_s + (mt * 16 + (lane & 15)) * L::kPStride + kk * 16 + (lane >> 4) * 8);
          const int mi = lane >> 3;
          const std::uint8_t* v_base =
              k_s + (kk * 16 + (lane & 7) + (mi & 1) * 8) * kRowBytes + (col0 + (mi >> 1) * 8) * 2;
#pragma unroll
          for (int np = 0; np < L::kNTiles / 2; ++np) {
            std::uint32_t bv[4];
            ldmatrix_x4_trans(bv, v_base + np * 32);
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) {
              mma_bf16(acc[mt][2 * np], a[mt], bv[0], bv[1]);
              mma_bf16(acc[mt][2 * np + 1], a[mt], bv[2], bv[3]);
            }
          }
        }
      } else {
        for (int tok = 0; tok < T; ++tok) {
          float pr[2][2];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            pr[mt][0] = __bfloat162float(p_s[(mt * 16 + g) * L::kPStride + tok]);
            pr[mt][1] = __bfloat162float(p_s[(mt * 16 + g + 8) * L::kPStride + tok]);
          }
          const std::uint8_t* v_row = k_s + tok * kRowBytes + (col0 + 2 * t4) * 2;
#pragma unroll
          for (int nt = 0; nt < L::kNTiles; ++nt) {
            const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(v_row + nt * 16));
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) {
              acc[mt][nt][0] = fmaf(pr[mt][0], v.x, acc[mt][nt][0]);
              acc[mt][nt][1] = fmaf(pr[mt][0], v.y, acc[mt][nt][1]);
              acc[mt][nt][2] = fmaf(pr[mt][1], v.x, acc[mt][nt][2]);
              acc[mt][nt][3] = fmaf(pr[mt][1], v.y, acc[mt][nt][3]);
            }
          }
        }
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::);

  // Epilogue: row statistics to shared memory, then o = acc / l and lse.
  if ((lane & 7) == 0) {
#pragma unroll
    for (int pass = 0; pass < L::kPasses; ++pass) {
      m_s[warp * L::kRowsPerWarp + pass * 4 + (lane >> 3)] = m_run[pass];
      l_s[warp * L::kRowsPerWarp + pass * 4 + (lane >> 3)] = l_run[pass];
    }
  }
  __syncthreads();
  const bool single = p.splits == 1;
  if (tid < kHeads && head0 + tid < p.heads) {
    const float l = l_s[tid];
    const float lse2 = m_s[tid] + log2f(l);
    const std::size_t bh = static_cast<std::size_t>(b) * p.heads + head0 + tid;
    if (single)
      p.lse[bh] = l > 0.0f ? lse2 * 0.69314718055994531f : INFINITY;
    else
      p.part_lse[(static_cast<std::size_t>(b) * p.splits + split) * p.heads + head0 + tid] =
          l > 0.0f ? lse2 : -INFINITY;
  }
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = mt * 16 + g + half * 8;
      const int head = head0 + row;
      if (head >= p.heads) continue;
      const float l = l_s[row];
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const std::size_t orow = single
          ? static_cast<std::size_t>(b) * p.heads + head
          : (static_cast<std::size_t>(b) * p.splits + split) * p.heads + head;
#pragma unroll
      for (int nt = 0; nt < L::kNTiles; ++nt) {
        const int col = col0 + nt * 8 + 2 * t4;
        const float v0 = acc[mt][nt][2 * half] * inv;
        const float v1 = acc[mt][nt][2 * half + 1] * inv;
        if (single)
          *reinterpret_cast<__nv_bfloat162*>(p.out + orow * kDimV + col) = __floats2bfloat162_rn(v0, v1);
        else
          *reinterpret_cast<float2*>(p.part_o + orow * kDimV + col) = make_float2(v0, v1);
      }
    }
}

__global__ void __launch_bounds__(128) combine_kernel_impl(const float* part_o, const float* part_lse,
                                                           __nv_bfloat16* out, float* lse, int heads,
                                                           int splits) {
  const int h = blockIdx.x;
  const int b = blockIdx.y;
  const float* ls = part_lse + static_cast<std::size_t>(b) * splits * heads + h;
  float big = -INFINITY;
  for (int s = 0; s < splits; ++s) big = fmaxf(big, ls[static_cast<std::size_t>(s) * heads]);
  if (big == -INFINITY) big = 0.0f;
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) sum += exp2f(ls[static_cast<std::size_t>(s) * heads] - big);
  const std::size_t bh = static_cast<std::size_t>(b) * heads + h;
  const int col = threadIdx.x * 4;
  float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (sum > 0.0f) {
    const float lse2 = big + log2f(sum);
    for (int s = 0; s < splits; ++s) {
      const float w = exp2f(ls[static_cast<std::size_t>(s) * heads] - lse2);
      if (w == 0.0f) continue;
      const float4 v = *reinterpret_cast<const float4*>(
          part_o + ((static_cast<std::size_t>(b) * splits + s) * heads + h) * kDimV + col);
      o.x += w * v.x;
      o.y += w * v.y;
      o.z += w * v.z;
      o.w += w * v.w;
    }
    if (threadIdx.x == 0) lse[bh] = lse2 * 0.69314718055994531f;
  } else if (threadIdx.x == 0) {
    lse[bh] = INFINITY;
  }
  __nv_bfloat162* dst = reinterpret_cast<__nv_bfloat162*>(out + bh * kDimV + col);
  dst[0] = __floats2bfloat162_rn(o.x, o.y);
  dst[1] = __floats2bfloat162_rn(o.z, o.w);
}

__global__ void dequant_selftest_impl(float scale, __nv_bfloat16* out) {
  const int code = threadIdx.x;  // 0..255
  const unsigned word = static_cast<unsigned>(code) * 0x01010101u;
  const uint4 c = dequant8(make_uint2(word, word), scale, false);
  const uint4 t = dequant8(make_uint2(word, word), scale, true);
  out[code] = as_bf162(c.x).x;
  out[256 + code] = as_bf162(t.x).x;
}

}  // namespace

const void* decode_kernel(int warps, int tile) {
  if (warps == 4 && tile == 16) return reinterpret_cast<const void*>(&decode_kernel_impl<4, 16>);
  if (warps == 4 && tile == 32) return reinterpret_cast<const void*>(&decode_kernel_impl<4, 32>);
  if (warps == 4 && tile == 64) return reinterpret_cast<const void*>(&decode_kernel_impl<4, 64>);
  if (warps == 8 && tile == 16) return reinterpret_cast<const void*>(&decode_kernel_impl<8, 16>);
  if (warps == 8 && tile == 32) return reinterpret_cast<const void*>(&decode_kernel_impl<8, 32>);
  if (warps == 8 && tile == 64) return reinterpret_cast<const void*>(&decode_kernel_impl<8, 64>);
  return nullptr;
}

const void* combine_kernel() { return reinterpret_cast<const void*>(&combine_kernel_impl); }

const void* dequant_selftest_kernel() { return reinterpret_cast<const void*>(&dequant_selftest_impl); }

}  // namespace abtrack::kernels::mla_decode
