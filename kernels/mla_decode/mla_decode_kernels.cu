// Sparse MLA FP8 decode for Hopper (sm_90): one CTA per (batch row, 32 heads, split).
// Per tile of T gathered tokens: 16-byte cp.async gathers (invalid slots zero-filled) into a
// ring of `stages` raw fp8 buffers, stages-1 tiles in flight while one is computed. Both
// products read the raw fp8 rows straight into mma.sync m16n8k16 fragments (bf16 in, f32
// accumulate) and dequantize in registers; nothing is staged as bf16 in shared memory:
//   S = Q K^T: warps = 2 n-groups x W/2 k parts; each k part owns whole 128-value scale groups,
//     its lanes read 4 fp8 bytes per token and k16 step, and Q's fragments use the same k order
//     (8 warps keep them in registers). The W/2 partial S tiles meet in shared memory.
//   online softmax in the log2 domain -> P (bf16) in shared memory,
//   O += P V: a warp owns 512/W columns; per 16 tokens a lane loads one word from each of its
//     four B-fragment rows and a byte permute turns them into four n-tiles' B fragments.
// Three barriers per tile (four with one stage). A combine kernel merges the splits.
#include "mla_decode_device.cuh"
#include "mla_decode_kernels.cuh"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace abtrack::kernels::mla_decode {

namespace {

using namespace dev;
constexpr int kKTotal = kDimQk / 16;  // 36 k16 steps: 32 fp8 (4 scale groups of 8), 4 bf16 rope

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
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

// Zeroes a set of f32 mma accumulators ([m-tile][n-tile][4]).
template <int N>
__device__ __forceinline__ void zero_fragments(float (&a)[2][N][4]) {
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) a[mt][n][i] = 0.0f;
}

// Warp roles and shared-memory carve-up of one (warps, tile) instantiation.
template <int W, int T>
struct Layout {
  static constexpr int kThreads = W * 32;
  // S = Q K^T: warp = (n-group, k part). Four k parts, each owning one 128-value fp8 scale group
  // (8 k16 steps) and one of the 4 bf16 rope steps, so the group's scale multiplies the part's
  // f32 result once per token instead of every value; W/4 n-groups of T/8/(W/4) n-tiles.
  static constexpr int kKSplit = 4;
  static constexpr int kNGroups = W / kKSplit;           // 1 (4 warps) or 2 (8 warps)
  static constexpr int kKSteps = 9;                      // 8 fp8 + 1 rope per k part
  static constexpr int kNT = T / 8;                      // n-tiles of S
  static constexpr int kNTW = kNT / kNGroups;            // n-tiles per warp
  static constexpr int kQBytes = 2 * kKTotal * 32 * 16;  // Q A fragments, fragment order
  static constexpr int kSStride = T + 4;                 // floats
  static constexpr int kPStride = T + 8;                 // bf16
  static constexpr int kRowsPerWarp = kHeads / W;        // softmax rows per warp
  static constexpr int kPasses = kRowsPerWarp / 4;       // 4 rows (8 lanes each) per pass
  static constexpr int kCols = kDimV / W;                // P V columns per warp: 128 or 64
  static constexpr int kDBlocks = kCols / 32;            // 32-column blocks (4 n-tiles each)
  static constexpr int kNTiles = kDBlocks * 4;
  static_assert(kKSplit * kKSteps == kKTotal, "k steps split evenly over warps");
  static_assert(kNTW * kNGroups == kNT, "n-tiles split evenly over n-groups");
  static_assert(128 % kCols == 0, "a warp's P V columns share one scale group");
};

// Q is stored scaled by 2^100 (exact in bf16) so that products with the bit-trick K values
// (true value * 2^-120 / scale) stay normal f32 numbers; S is scaled back in the softmax.
constexpr float kQScale = 0x1.0p100f;
constexpr float kSUnscale = 0x1.0p-100f;

// The k16 step (0..35) that step i of k part kp computes: its fp8 group, then its rope step.
__device__ __forceinline__ int kstep_of(int kp, int i) { return i < 8 ? 8 * kp + i : 32 + kp; }

// The A fragment of Q (scaled by 2^100) for m-tile mt and k16 step j, in the k order of the B
// fragments: lane (g, t4) covers dims 16j + 4t4 .. +3 of head rows g and g + 8, with mma k
// indices (2t4, 2t4+1) = dims (4t4, 4t4+2) and (2t4+8, 2t4+9) = dims (4t4+1, 4t4+3): the even
// and odd bytes of a K word, which the bit trick produces without a byte permute. Rows past
// `heads` are zero.
__device__ __forceinline__ uint4 load_q_frag(const KernelParams& p, int b, int head0, int mt, int j, int lane) {
  const int h0 = head0 + mt * 16 + (lane >> 2);
  const int d = 16 * j + 4 * (lane & 3);
  uint2 r0 = make_uint2(0, 0), r1 = r0;
  const __nv_bfloat16* q = p.q + static_cast<std::size_t>(b) * p.heads * kDimQk + d;
  if (h0 < p.heads) r0 = __ldg(reinterpret_cast<const uint2*>(q + static_cast<std::size_t>(h0) * kDimQk));
  if (h0 + 8 < p.heads) r1 = __ldg(reinterpret_cast<const uint2*>(q + static_cast<std::size_t>(h0 + 8) * kDimQk));
  const __nv_bfloat162 s2 = __float2bfloat162_rn(kQScale);
  auto even = [&](uint2 r) { return as_u32(__hmul2(as_bf162(__byte_perm(r.x, r.y, 0x5410)), s2)); };
  auto odd = [&](uint2 r) { return as_u32(__hmul2(as_bf162(__byte_perm(r.x, r.y, 0x7632)), s2)); };
  return make_uint4(even(r0), even(r1), odd(r0), odd(r1));
}

// Four fp8 K values of one token (dims 4t4 .. 4t4+3 of a k16 step), unscaled, as the B
// fragment (b0 = bytes 0 and 2, b1 = bytes 1 and 3). bits: sign to bit 15, exponent|mantissa to
// bits 4..10 (the value times 2^-120, subnormals included); cvt: cvt.rn.f16x2.e4m3x2 (exact)
// then bf16 (exact: e4m3 values fit bf16).
__device__ __forceinline__ void dequant4_split(std::uint32_t w, bool bits, std::uint32_t& b0, std::uint32_t& b1) {
  if (bits) {
    b0 = ((w << 8) & 0x80008000u) | ((w << 4) & 0x07f007f0u);
    b1 = (w & 0x80008000u) | ((w >> 4) & 0x07f007f0u);
    return;
  }
  auto pair = [](std::uint32_t two) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two & 0xffffu), __NV_E4M3);
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
    return as_u32(__floats2bfloat162_rn(f.x, f.y));
  };
  b0 = pair(__byte_perm(w, 0, 0x0020));
  b1 = pair(__byte_perm(w, 0, 0x0031));
}

// d += a * b with mma.sync, or (kFma, the negative control) the same product from the same
// fragments with shuffles and scalar FMAs. All 32 lanes must call it.
template <bool kFma>
__device__ __forceinline__ void mma_or_fma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                           std::uint32_t b1) {
  if constexpr (!kFma) {
    mma_bf16(d, a, b0, b1);
  } else {
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;
    const int t4 = lane & 3;
#pragma unroll 1
    for (int q = 0; q < 4; ++q) {  // the k indices 2q, 2q+1, 2q+8, 2q+9 held by thread q of a group
      const int la = g * 4 + q, lb0 = 8 * t4 + q, lb1 = 8 * t4 + 4 + q;  // B column n lives in lane n*4+q
      const float2 a0 = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, a[0], la)));
      const float2 a1 = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, a[1], la)));
      const float2 a2 = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, a[2], la)));
      const float2 a3 = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, a[3], la)));
      const float2 c0 = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, b0, lb0)));
      const float2 c0h = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, b1, lb0)));
      const float2 c1 = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, b0, lb1)));
      const float2 c1h = __bfloat1622float2(as_bf162(__shfl_sync(0xffffffffu, b1, lb1)));
      d[0] = fmaf(a0.x, c0.x, fmaf(a0.y, c0.y, fmaf(a2.x, c0h.x, fmaf(a2.y, c0h.y, d[0]))));
      d[1] = fmaf(a0.x, c1.x, fmaf(a0.y, c1.y, fmaf(a2.x, c1h.x, fmaf(a2.y, c1h.y, d[1]))));
      d[2] = fmaf(a1.x, c0.x, fmaf(a1.y, c0.y, fmaf(a3.x, c0h.x, fmaf(a3.y, c0h.y, d[2]))));
      d[3] = fmaf(a1.x, c1.x, fmaf(a1.y, c1.y, fmaf(a3.x, c1h.x, fmaf(a3.y, c1h.y, d[3]))));
    }
  }
}

// Byte C of two fp8 words (two token rows, the same column) as one unscaled bf16x2: the V
// operand of P V read straight from the raw rows (the tokens' scales are folded into P). bits:
// byte_perm puts the bytes at bits 8..15 and 24..31, then the bit trick (the value * 2^-120);
// cvt: the pair through cvt.rn.f16x2.e4m3x2 and f32 (exact).
template <int C>
__device__ __forceinline__ std::uint32_t dequant_column(std::uint32_t wa, std::uint32_t wb, bool bits) {
  if (bits) {
    const std::uint32_t u = __byte_perm(wa, wb, C | (C << 4) | ((4 + C) << 8) | ((4 + C) << 12));
    return (u & 0x80008000u) | ((u & 0x7f007f00u) >> 4);
  }
  const std::uint32_t x = __byte_perm(wa, wb, C | ((4 + C) << 4));
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(x & 0xffffu), __NV_E4M3);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  return as_u32(__floats2bfloat162_rn(f.x, f.y));
}

// The decode kernel, phase by phase: the prologue (indices, the first gathers, Q), then per tile
// the ring (wait, refill), S = Q K^T, the softmax and O += P V, then the epilogue. Every phase is
// a __forceinline__ function: the kernel compiles to the code of a single body. The kernel carves
// shared memory and passes each phase the buffers it touches, one pointer each (a struct of them
// gave ptxas slightly different code).

// This thread's place: its warp and lane, the mma fragment coordinates g (groupID) and t4 (thread
// in group), and its warp's k part and n-group in S = Q K^T.
struct Thread {
  int tid, warp, lane, g, t4, kp, ng;
};
__device__ __forceinline__ Thread this_thread() {
  Thread t;
  t.tid = threadIdx.x;
  t.warp = t.tid >> 5;
  t.lane = t.tid & 31;
  t.g = t.lane >> 2;
  t.t4 = t.lane & 3;
  t.kp = t.warp & 3;   // QK^T k part: fp8 scale group kp and rope step kp
  t.ng = t.warp >> 2;  // QK^T n-group
  return t;
}

// Prologue: the split's indices (-1 past topk) into shared memory.
template <int W, int T>
__device__ __forceinline__ void load_indices(const KernelParams& p, std::int32_t* idx_s, const CtaWork& work, int tid) {
  for (int j = tid; j < work.n_tiles * T; j += Layout<W, T>::kThreads) {
    const int slot = work.t_first * T + j;
    idx_s[j] = slot < p.topk ? __ldg(&p.indices[static_cast<std::size_t>(work.b) * p.topk + slot]) : -1;
  }
}

// The gathers: 16-byte cp.async of tile `tile` into ring slot `slot`: warp w copies rows
// w, w + W, ..., lane l chunks l and l + 32 of each (41 chunks), so a warp instruction moves
// 512 contiguous bytes. Invalid slots (-1) are zero-filled (src-size 0: nothing is read), so
// 0 * garbage can never make a NaN in P V.
template <int W, int T>
__device__ __forceinline__ void issue_tile(const KernelParams& p, std::uint8_t* raw_s, const std::int32_t* idx_s,
                                           const Thread& th, int tile, int slot) {
  const int lane = th.lane;
  std::uint8_t* dst = raw_s + slot * (T * kTokenBytes) + lane * 16;
#pragma unroll
  for (int t = th.warp; t < T; t += W) {
    const int id = idx_s[tile * T + t];
    const int bytes = id >= 0 ? 16 : 0;  // an invalid slot reads row 0's address, 0 bytes of it
    const std::uint8_t* src = p.pool + static_cast<std::size_t>(max(id, 0)) * kTokenBytes + lane * 16;
    cp_async_16_zfill(dst + t * kTokenBytes, src, bytes);
    if (lane < kChunks - 32) cp_async_16_zfill(dst + t * kTokenBytes + 32 * 16, src + 32 * 16, bytes);
  }
}

// Prologue: Q's A fragments (both m-tiles, all 36 k16 steps) into shared memory, in fragment order.
template <int W, int T>
__device__ __forceinline__ void store_q_fragments(const KernelParams& p, std::uint8_t* smem, const CtaWork& work,
                                                  int tid) {
  uint4* q_w = reinterpret_cast<uint4*>(smem);
  for (int c = tid; c < 2 * kKTotal * 32; c += Layout<W, T>::kThreads)
    q_w[c] = load_q_frag(p, work.b, work.head0, c / (kKTotal * 32), (c / 32) % kKTotal, c & 31);
}

// S = Q K^T straight from the raw fp8 rows of the tile `raw`, into this warp's k part of the S
// partials (s_s): per k16 step and n-tile one 4-byte load per lane (conflict-free: 656-byte rows
// are 4 banks apart) turned into the B fragment in registers; Q's two A fragments per step are
// 16-byte loads. The 8 fp8 steps of the part's scale group are summed unscaled, then multiplied by
// each token's scale; then the rope step (bf16).
template <int W, int T, bool kFma, bool kBits>
__device__ __forceinline__ void scores(const uint4* q_s, const std::uint8_t* raw, float* s_s, const Thread& th) {
  using L = Layout<W, T>;
  constexpr bool bits = kBits;
  const int lane = th.lane, g = th.g, t4 = th.t4, kp = th.kp, ng = th.ng;
  float sacc[2][L::kNTW][4];
  zero_fragments(sacc);
  const std::uint8_t* ktile = raw + (ng * L::kNTW * 8 + g) * kTokenBytes;  // + n * 8 rows
  // When the part's fp8 group is done: scale each token column (2t4, 2t4+1 of each n-tile) by its
  // group scale (`unit` undoes the bit trick's 2^-120), to the units the rope products carry.
  auto scale_group = [&](float unit) {
#pragma unroll
    for (int n = 0; n < L::kNTW; ++n) {
      const std::uint8_t* t0 = raw + ((ng * L::kNTW + n) * 8 + 2 * t4) * kTokenBytes + 512 + 4 * kp;
      const float s0 = *reinterpret_cast<const float*>(t0) * unit;
      const float s1 = *reinterpret_cast<const float*>(t0 + kTokenBytes) * unit;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        sacc[mt][n][0] *= s0;
        sacc[mt][n][1] *= s1;
        sacc[mt][n][2] *= s0;
        sacc[mt][n][3] *= s1;
      }
    }
  };
  // The bf16 rope dims 4t4 .. 4t4+3 of step r of n-tile n, in the same even/odd k order as Q.
  auto rope_b = [&](int n, int r, std::uint32_t& b0, std::uint32_t& b1) {
    const uint2 w = *reinterpret_cast<const uint2*>(ktile + n * 8 * kTokenBytes + 528 + 32 * r + 8 * t4);
    b0 = __byte_perm(w.x, w.y, 0x5410);
    b1 = __byte_perm(w.x, w.y, 0x7632);
  };
  // (4 warps x 64 tokens: 8 n-tiles beside 128 accumulators; unrolled, its loads spill.)
#pragma unroll(W == 4 && T == 64 ? 1 : L::kKSteps)
  for (int i = 0; i < L::kKSteps; ++i) {
    const int j = kstep_of(kp, i);
    std::uint32_t a[2][4];
    const uint4 f0 = q_s[j * 32 + lane];
    const uint4 f1 = q_s[(kKTotal + j) * 32 + lane];
    a[0][0] = f0.x;
    a[0][1] = f0.y;
    a[0][2] = f0.z;
    a[0][3] = f0.w;
    a[1][0] = f1.x;
    a[1][1] = f1.y;
    a[1][2] = f1.z;
    a[1][3] = f1.w;
    if (i == 8) scale_group(bits ? 0x1.0p120f : 1.0f);  // x 2^120 matches the rope's 2^100
#pragma unroll
    for (int n = 0; n < L::kNTW; ++n) {
      std::uint32_t b0, b1;
      if (i < 8)
        dequant4_split(*reinterpret_cast<const std::uint32_t*>(ktile + n * 8 * kTokenBytes + 16 * j + 4 * t4), bits, b0,
                       b1);
      else rope_b(n, j - 32, b0, b1);
      mma_or_fma<kFma>(sacc[0][n], a[0], b0, b1);
      mma_or_fma<kFma>(sacc[1][n], a[1], b0, b1);
    }
  }
  float* s_part = s_s + kp * kHeads * L::kSStride;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int n = 0; n < L::kNTW; ++n) {
      const int row = mt * 16 + g;
      const int col = (ng * L::kNTW + n) * 8 + 2 * t4;
      *reinterpret_cast<float2*>(s_part + row * L::kSStride + col) = make_float2(sacc[mt][n][0], sacc[mt][n][1]);
      *reinterpret_cast<float2*>(s_part + (row + 8) * L::kSStride + col) = make_float2(sacc[mt][n][2], sacc[mt][n][3]);
    }
}

// Online softmax (log2 domain) of one tile: a warp owns kRowsPerWarp head rows, 8 lanes per row,
// so four rows are reduced at once (3 shuffles per reduction). It sums the k parts' S partials,
// writes P (bf16) and each row's alpha, and updates this lane's running maximum and sum. l sums
// the f32 p (FlashMLA's convention); P V uses p rounded to bf16.
template <int W, int T>
__device__ __forceinline__ void softmax(const float* s_s, const std::int32_t* tile_idx, __nv_bfloat16* p_s,
                                        float* alpha_s, float scale_log2, float (&m_run)[Layout<W, T>::kPasses],
                                        float (&l_run)[Layout<W, T>::kPasses], const Thread& th) {
  using L = Layout<W, T>;
  const int warp = th.warp, lane = th.lane;
#pragma unroll
  for (int pass = 0; pass < L::kPasses; ++pass) {
    const int row = warp * L::kRowsPerWarp + pass * 4 + (lane >> 3);
    const int sl = lane & 7;
    float x[T / 8];
    float tile_max = -INFINITY;
    const float* s_row = s_s + row * L::kSStride + sl;
#pragma unroll
    for (int j = 0; j < T / 8; ++j) {
      // Every column's partials are written (an invalid slot's K row is zero-filled): sum them
      // unconditionally, then mask.
      float sc = 0.0f;
#pragma unroll
      for (int k = 0; k < L::kKSplit; ++k) sc += s_row[k * kHeads * L::kSStride + 8 * j];
      x[j] = tile_idx[sl + 8 * j] >= 0 ? sc * scale_log2 : -INFINITY;  // S carries Q's 2^100
      tile_max = fmaxf(tile_max, x[j]);
    }
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
    // Lazy rescaling: the running maximum moves only when the tile's exceeds it by more than
    // kRescaleLog2, so P stays <= 2^kRescaleLog2 (exact enough in bf16, far from f32's range)
    // and O is rescaled on a few tiles instead of nearly every one (m and l stay consistent:
    // lse = m + log2 l with whatever m was used).
    const float m_new = tile_max > m_run[pass] + kRescaleLog2 ? tile_max : m_run[pass];
    const float alpha = m_new == m_run[pass] ? 1.0f : fast_exp2(m_run[pass] - m_new);  // exactly 1: no rescale
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < T / 8; ++j) {
      const float pv = fast_exp2(x[j] - m_new);
      p_s[row * L::kPStride + sl + 8 * j] = __float2bfloat16_rn(pv);
      sum += pv;
    }
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    l_run[pass] = l_run[pass] * alpha + sum;
    m_run[pass] = m_new;
    if (sl == 0) alpha_s[row] = alpha;
  }
}

// O = O * alpha + P V over this warp's kCols columns, both m-tiles. V straight from the raw fp8
// rows of the tile `raw`: per 16 tokens x 32 columns a lane loads one word from each of the rows
// 2t4, 2t4+1, 2t4+8, 2t4+9 (its B fragment rows; conflict-free), and byte c of the four words is
// the B fragment of n-tile c, column 4g + c.
template <int W, int T, bool kFma, bool kBits>
__device__ __forceinline__ void accumulate_pv(float (&acc)[2][Layout<W, T>::kNTiles][4], const __nv_bfloat16* p_s,
                                              const float* alpha_s, const std::uint8_t* raw, const Thread& th, int col0,
                                              int vgroup) {
  using L = Layout<W, T>;
  constexpr bool bits = kBits;
  const int lane = th.lane, g = th.g, t4 = th.t4;
  float al[2][2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    al[mt][0] = alpha_s[mt * 16 + g];
    al[mt][1] = alpha_s[mt * 16 + g + 8];
  }
  // Once the running maxima settle, alpha is 1 for every row: skip the rescale then.
  if (!__all_sync(0xffffffffu, al[0][0] == 1.0f && al[0][1] == 1.0f && al[1][0] == 1.0f && al[1][1] == 1.0f)) {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < L::kNTiles; ++nt) {
        acc[mt][nt][0] *= al[mt][0];
        acc[mt][nt][1] *= al[mt][0];
        acc[mt][nt][2] *= al[mt][1];
        acc[mt][nt][3] *= al[mt][1];
      }
  }
  // (The FMA control rolls this loop: unrolled, its shuffles would spill.)
#pragma unroll(kFma ? 1 : T / 16)
  for (int kk = 0; kk < T / 16; ++kk) {
    std::uint32_t a[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      ldmatrix_x4(a[mt], p_s + (mt * 16 + (lane & 15)) * L::kPStride + kk * 16 + (lane >> 4) * 8);
    const std::uint8_t* r0 = raw + (kk * 16 + 2 * t4) * kTokenBytes;
    const std::uint8_t* r1 = r0 + kTokenBytes;
    const std::uint8_t* r2 = r0 + 8 * kTokenBytes;
    const std::uint8_t* r3 = r0 + 9 * kTokenBytes;
    const float s0 = *reinterpret_cast<const float*>(r0 + 512 + 4 * vgroup);
    const float s1 = *reinterpret_cast<const float*>(r1 + 512 + 4 * vgroup);
    const float s2 = *reinterpret_cast<const float*>(r2 + 512 + 4 * vgroup);
    const float s3 = *reinterpret_cast<const float*>(r3 + 512 + 4 * vgroup);
    // Fold the tokens' scales (x 2^120 for the bit trick) into P's A fragments: a0/a1 hold
    // tokens 2t4, 2t4+1 and a2/a3 tokens 2t4+8, 2t4+9 (rows g and g+8).
    const float unit = bits ? 0x1.0p120f : 1.0f;
    const __nv_bfloat162 sc01 = __floats2bfloat162_rn(s0 * unit, s1 * unit);
    const __nv_bfloat162 sc23 = __floats2bfloat162_rn(s2 * unit, s3 * unit);
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      a[mt][0] = as_u32(__hmul2(as_bf162(a[mt][0]), sc01));
      a[mt][1] = as_u32(__hmul2(as_bf162(a[mt][1]), sc01));
      a[mt][2] = as_u32(__hmul2(as_bf162(a[mt][2]), sc23));
      a[mt][3] = as_u32(__hmul2(as_bf162(a[mt][3]), sc23));
    }
#pragma unroll
    for (int db = 0; db < L::kDBlocks; ++db) {
      const int off = col0 + 32 * db + 4 * g;
      const std::uint32_t w0 = *reinterpret_cast<const std::uint32_t*>(r0 + off);
      const std::uint32_t w1 = *reinterpret_cast<const std::uint32_t*>(r1 + off);
      const std::uint32_t w2 = *reinterpret_cast<const std::uint32_t*>(r2 + off);
      const std::uint32_t w3 = *reinterpret_cast<const std::uint32_t*>(r3 + off);
#define ABTRACK_MLA_PV_COLUMN(C)                              \
  {                                                           \
    const std::uint32_t b0 = dequant_column<C>(w0, w1, bits); \
    const std::uint32_t b1 = dequant_column<C>(w2, w3, bits); \
    mma_or_fma<kFma>(acc[0][db * 4 + C], a[0], b0, b1);       \
    mma_or_fma<kFma>(acc[1][db * 4 + C], a[1], b0, b1);       \
  }
      ABTRACK_MLA_PV_COLUMN(0)
      ABTRACK_MLA_PV_COLUMN(1)
      ABTRACK_MLA_PV_COLUMN(2)
      ABTRACK_MLA_PV_COLUMN(3)
#undef ABTRACK_MLA_PV_COLUMN
    }
  }
}

// Epilogue: row statistics to shared memory, then o = acc / l and lse: bf16 out with one split,
// else the split's f32 partials and lse (log2) for the combine kernel.
template <int W, int T>
__device__ __forceinline__ void epilogue(const KernelParams& p, const CtaWork& work, float* m_s, float* l_s,
                                         const float (&acc)[2][Layout<W, T>::kNTiles][4],
                                         const float (&m_run)[Layout<W, T>::kPasses],
                                         const float (&l_run)[Layout<W, T>::kPasses], const Thread& th, int col0) {
  using L = Layout<W, T>;
  const int tid = th.tid, warp = th.warp, lane = th.lane, g = th.g, t4 = th.t4;
  if ((lane & 7) == 0) {
#pragma unroll
    for (int pass = 0; pass < L::kPasses; ++pass) {
      m_s[warp * L::kRowsPerWarp + pass * 4 + (lane >> 3)] = m_run[pass];
      l_s[warp * L::kRowsPerWarp + pass * 4 + (lane >> 3)] = l_run[pass];
    }
  }
  __syncthreads();
  const bool single = p.splits == 1;
  if (tid < kHeads && work.head0 + tid < p.heads) {
    const float l = l_s[tid];
    const float lse2 = m_s[tid] + log2f(l);
    const std::size_t bh = static_cast<std::size_t>(work.b) * p.heads + work.head0 + tid;
    if (single) p.lse[bh] = l > 0.0f ? lse2 * 0.69314718055994531f : INFINITY;
    else
      p.part_lse[(static_cast<std::size_t>(work.b) * p.splits + work.split) * p.heads + work.head0 + tid] =
          l > 0.0f ? lse2 : -INFINITY;
  }
  // A lane holds, per (m-tile, half, 32-column block), the 8 contiguous columns 8*t4 .. 8*t4+7:
  // column 4*e + c of them is acc[mt][db*4 + c][2*half + e].
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = mt * 16 + g + half * 8;
      const int head = work.head0 + row;
      if (head >= p.heads) continue;
      const float l = l_s[row];
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const std::size_t orow = single ? static_cast<std::size_t>(work.b) * p.heads + head
                                      : (static_cast<std::size_t>(work.b) * p.splits + work.split) * p.heads + head;
#pragma unroll
      for (int db = 0; db < L::kDBlocks; ++db) {
        const int col = col0 + 32 * db + 8 * t4;
        float v[8];
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int c = 0; c < 4; ++c) v[4 * e + c] = acc[mt][db * 4 + c][2 * half + e] * inv;
        if (single) {
          uint4 o;
          o.x = as_u32(__floats2bfloat162_rn(v[0], v[1]));
          o.y = as_u32(__floats2bfloat162_rn(v[2], v[3]));
          o.z = as_u32(__floats2bfloat162_rn(v[4], v[5]));
          o.w = as_u32(__floats2bfloat162_rn(v[6], v[7]));
          *reinterpret_cast<uint4*>(p.out + orow * kDimV + col) = o;
        } else {
          float4* dst = reinterpret_cast<float4*>(p.part_o + orow * kDimV + col);
          dst[0] = make_float4(v[0], v[1], v[2], v[3]);
          dst[1] = make_float4(v[4], v[5], v[6], v[7]);
        }
      }
    }
}

// kBits: the dequant path, a template parameter (a run-time switch cost a branch and a NOP per
// fragment, ~16 instructions per token).
template <int W, int T, bool kFma, bool kBits>
// 8 warps with tiles up to 32 (mma): at most 128 registers, so that two CTAs share an SM when
// shared memory allows (64-token tiles never fit twice; the FMA control would spill).
__global__ void __launch_bounds__(W * 32, (W == 8 && T <= 32 && !kFma) ? 2 : 1)
    decode_kernel_impl(const KernelParams p) {
  using L = Layout<W, T>;
  extern __shared__ __align__(128) std::uint8_t smem[];
  const uint4* q_s = reinterpret_cast<const uint4*>(smem);                    // [2][36][32] A fragments
  std::uint8_t* raw_s = smem + L::kQBytes;                                    // stages x [T tokens][656 B]
  float* s_s = reinterpret_cast<float*>(raw_s + p.stages * T * kTokenBytes);  // [4 k parts][32 heads][T + 4]
  __nv_bfloat16* p_s = reinterpret_cast<__nv_bfloat16*>(s_s + L::kKSplit * kHeads * L::kSStride);  // [32][T + 8]
  float* alpha_s = reinterpret_cast<float*>(p_s + kHeads * L::kPStride);                           // [32]
  float* m_s = alpha_s + kHeads;                                                                   // [32]
  float* l_s = m_s + kHeads;                                                                       // [32]
  std::int32_t* idx_s = reinterpret_cast<std::int32_t*>(l_s + kHeads);                             // [tiles][T]

  const Thread th = this_thread();
  const int tid = th.tid;
  const CtaWork work = cta_work(p);
  const int n_tiles = work.n_tiles;
  const int stages = p.stages;

  // Prologue: the split's indices, then the first `stages` tiles in flight, then Q's fragments
  // (in shared memory) while they land.
  load_indices<W, T>(p, idx_s, work, tid);
  __syncthreads();
  for (int j = 0; j < stages; ++j) {
    if (j < n_tiles) issue_tile<W, T>(p, raw_s, idx_s, th, j, j);
    cp_async_commit();
  }
  store_q_fragments<W, T>(p, smem, work, tid);

  // P V accumulators: rows (mt*16 + g, +8); n-tile db*4 + c holds columns
  // col0 + 32*db + 4*n + c for n = 2*t4, 2*t4 + 1 (the byte column order of the fp8 words).
  float acc[2][L::kNTiles][4];
  zero_fragments(acc);
  float m_run[L::kPasses], l_run[L::kPasses];  // this lane's softmax row in each pass
#pragma unroll
  for (int i = 0; i < L::kPasses; ++i) {
    m_run[i] = kMinusBig;
    l_run[i] = 0.0f;
  }
  const float scale_log2 = p.scale_log2 * kSUnscale;
  const int col0 = th.warp * L::kCols;
  const int vgroup = col0 / 128;  // the scale group of this warp's P V columns

  // The ring slot of tile `it` and of tile it-1, tracked (a run-time modulo costs ~30 instructions).
  int slot = 0, prev_slot = 0;
  for (int it = 0; it < n_tiles; ++it) {
    // Tile `it` has landed for everyone, and everyone is done with tile it-1 (its P V), whose
    // slot is refilled at once with tile it-1+stages. One stage: load, wait, compute in turn.
    if (stages == 1) {
      if (it > 0) {
        __syncthreads();
        issue_tile<W, T>(p, raw_s, idx_s, th, it, 0);
        cp_async_commit();
      }
      cp_async_wait(0);
    } else {
      cp_async_wait(it == 0 ? stages - 1 : stages - 2);
    }
    __syncthreads();
    if (stages > 1 && it > 0) {
      if (it - 1 + stages < n_tiles) issue_tile<W, T>(p, raw_s, idx_s, th, it - 1 + stages, prev_slot);
      cp_async_commit();
    }
    const std::uint8_t* raw = raw_s + slot * (T * kTokenBytes);
    prev_slot = slot;
    slot = slot + 1 == stages ? 0 : slot + 1;

    scores<W, T, kFma, kBits>(q_s, raw, s_s, th);
    __syncthreads();
    softmax<W, T>(s_s, idx_s + it * T, p_s, alpha_s, scale_log2, m_run, l_run, th);
    __syncthreads();
    accumulate_pv<W, T, kFma, kBits>(acc, p_s, alpha_s, raw, th, col0, vgroup);
  }
  asm volatile("cp.async.wait_all;\n" ::);
  epilogue<W, T>(p, work, m_s, l_s, acc, m_run, l_run, th, col0);
}

__global__ void __launch_bounds__(128) combine_kernel_impl(const float* part_o, const float* part_lse,
                                                           __nv_bfloat16* out, float* lse, int heads, int splits) {
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

// Dequantizes each of the 256 e4m3 codes through the decode kernel's own conversions: the K
// form (dequant4_split: even and odd bytes) and the V form (dequant_column: one byte of two
// words), for both paths. A code's value is reported (times `scale`) only when the K and V forms
// agree, else NaN; the bit-trick values are scaled back by 2^120.
__global__ void dequant_selftest_impl(float scale, __nv_bfloat16* out) {
  const int code = threadIdx.x;  // 0..255
  const std::uint32_t word = static_cast<std::uint32_t>(code) * 0x01010101u;
  std::uint32_t c0, c1, t0, t1;
  dequant4_split(word, false, c0, c1);
  dequant4_split(word, true, t0, t1);
  const float kc = __low2float(as_bf162(c0)), kc2 = __high2float(as_bf162(c1));
  const float kt = __low2float(as_bf162(t1)) * 0x1.0p120f, kt2 = __high2float(as_bf162(t0)) * 0x1.0p120f;
  const float vc = __high2float(as_bf162(dequant_column<2>(word, word, false)));
  const float vt = __low2float(as_bf162(dequant_column<1>(word, word, true))) * 0x1.0p120f;
  const bool cvt_agrees = kc == kc2 && kc == vc;
  const bool bits_agree = kt == kt2 && kt == vt;
  out[code] = __float2bfloat16_rn(cvt_agrees ? kc * scale : NAN);
  out[256 + code] = __float2bfloat16_rn(bits_agree ? kt * scale : NAN);
}

}  // namespace

namespace {
template <int W, int T>
const void* kernel_of(bool fma, bool bits) {
  if (fma)
    return bits ? reinterpret_cast<const void*>(&decode_kernel_impl<W, T, true, true>)
                : reinterpret_cast<const void*>(&decode_kernel_impl<W, T, true, false>);
  return bits ? reinterpret_cast<const void*>(&decode_kernel_impl<W, T, false, true>)
              : reinterpret_cast<const void*>(&decode_kernel_impl<W, T, false, false>);
}
}  // namespace

const void* decode_kernel(int warps, int tile, bool fma, bool bits) {
  if (warps == 4 && tile == 16) return kernel_of<4, 16>(fma, bits);
  if (warps == 4 && tile == 32) return kernel_of<4, 32>(fma, bits);
  if (warps == 4 && tile == 64) return kernel_of<4, 64>(fma, bits);
  if (warps == 8 && tile == 16) return kernel_of<8, 16>(fma, bits);
  if (warps == 8 && tile == 32) return kernel_of<8, 32>(fma, bits);
  if (warps == 8 && tile == 64) return kernel_of<8, 64>(fma, bits);
  return nullptr;
}

const void* combine_kernel() { return reinterpret_cast<const void*>(&combine_kernel_impl); }

const void* dequant_selftest_kernel() { return reinterpret_cast<const void*>(&dequant_selftest_impl); }

}  // namespace abtrack::kernels::mla_decode
