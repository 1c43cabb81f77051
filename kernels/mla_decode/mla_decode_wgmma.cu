// Sparse MLA FP8 decode on Hopper's asynchronous tensor cores (`--math wgmma`): one CTA of three
// warpgroups per (batch row, 32 heads, split), 64-token tiles, products transposed so that the
// tile's tokens are wgmma's M dimension (64, whatever the number of heads):
//
//   S^T (64 tokens x 32 heads) = K (64 x 576) Q^T      wgmma m64n32k16, A = K in registers (each
//                                                       thread's fragments loaded from the raw
//                                                       rows and converted), B = Q from shared
//                                                       memory; k split between the two math
//                                                       warpgroups, each then adds the other's
//                                                       partial for its 16 heads (its softmax)
//   O^T (512 x 32 heads)      += V^T (512 x 64) P^T    wgmma m64n32k16, A = the f16 V tile
//                                                       (transposed descriptor), B = P; math
//                                                       warpgroup g owns dims 256g.. (64 registers)
//
// Per tile: four producer warps (the third warpgroup, most of its registers handed to the math
// through setmaxnreg) gather the rows with bulk copies (TMA, 656 bytes each) into a ring of raw
// stages, and write the last of each math warpgroup's 16 k-steps of the f16 V tile.
// Each math thread loads its A fragments of K straight from the raw rows (one 4-byte load of e4m3
// values per k-step and token, conflict-free), turns them into f16 with the bit trick (value *
// 2^-8 in 7 integer instructions per 4 values, in the SASS) times the group scale (* 2^8, one f16x2 multiply,
// rounded once).
// S^T is issued while O^T of the previous tile may still run; once both are done the converted
// values go to the f16 V tile (each math warpgroup writes 15 k-steps of the half its own O^T
// reads; the producers convert the last one from the raw rows meanwhile, then refill the slot
// with a later tile, whose gather overlaps everything after), then the softmax, then O^T is
// issued and left running. Q is scaled per head row by a power of two into f16's range (undone
// in the softmax); RoPE products stay bf16. The V tile's k-steps and P are stored with stmatrix.
// P is written with the running maxima at once; the softmax's rescaling check is a flag read
// after the barrier before O^T. The epilogue writes from the accumulators. With splits there is
// no combine kernel: 2, 4 or 8 splits run as a cluster whose CTAs combine each other's
// accumulators through distributed shared memory (m and l pushed to every CTA before the first
// cluster barrier, the second one's wait left for the exit); other counts are combined by the last
// CTA of a (batch row, head block) to finish, from f16 partials. Design: docs/mla-decode-kernels.md;
// measurements: the kernel's experiments under runs/.
#include "mla_decode_device.cuh"
#include "mla_decode_kernels.cuh"

#include <cuda_fp16.h>

#ifdef ABTRACK_WGMMA_PHASES
#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>
#endif

namespace abtrack::kernels::mla_decode {

namespace {

using namespace dev;

constexpr int kTile = 64;                     // tokens per tile: wgmma's M
constexpr int kMathThreads = 256;             // two warpgroups: conversion, wgmma, softmax
constexpr int kThreads = kMathThreads + 128;  // and a third warpgroup: the gathers
// The third warpgroup's four warps all issue gathers, 16 rows of a tile each (with one producer
// warp the kernel was 1.5 us slower at B=64 h=32).
constexpr int kProducers = 4;
constexpr int kRowsPerProducer = kTile / kProducers;          // rows of a tile each of them copies
constexpr int kRingThreads = kMathThreads + 32 * kProducers;  // the math warps and the producers
// k-steps (of 16 per math warpgroup) of the f16 V tile that the producer warps convert and
// write instead of the math warps, while those swap partials and run the softmax. 1 is fastest:
// the softmax leaves a short window beside the producers' conversion, and more k-steps make the
// producers hold up O^T. Side by side at B=64 h=32: 4 k-steps 46.08 us, 3 45.58, 2 45.20 / 45.10,
// 1 44.90, 0 45.70.
// With one stage the kernel is built without it (decode_kernel_wgmma): the producers would
// refill the only slot after converting, and the gather would wait (66 against 53 us).
constexpr int kProducerKs = 1;
// Registers per thread (setmaxnreg): the math warpgroups hold O^T (64), S^T (16) and a tile's
// K fragments (72) at once; the producer's warpgroup needs fewer. setmaxnreg only moves registers
// between the CTA's warps: 2 x 128 x 224 + 128 x 56 = 64,512 = 384 x 168, what the CTA is launched
// with (more, and setmaxnreg.inc waits forever: the kernel hangs). With the producer conversion
// 224 / 56 (232 / 40 was 0.1-0.3 us slower at every shape measured, with 4 producer k-steps);
// without it 232 / 40 (1 us faster than 224 / 56 at B=64 h=32).
template <int kPks>
constexpr int kMathRegs = kPks > 0 ? 224 : 232;
template <int kPks>
constexpr int kProducerRegs = (384 * 168 - 256 * kMathRegs<kPks>) / 128;
static_assert(kProducerRegs<kProducerKs> >= 24 && kProducerRegs<kProducerKs> % 8 == 0 &&
                  kMathRegs<kProducerKs> % 8 == 0 && kMathRegs<kProducerKs> <= 256,
              "setmaxnreg counts: multiples of 8 in [24, 256] that add up to the launch's 384 x 168");
constexpr int kStageBytes = kTile * kTokenBytes;         // one raw tile, row-major [64 tokens][656 B]
constexpr int kRopeOffset = 528;                         // bytes 0..511 e4m3, 512..527 scales, 528..655 RoPE
constexpr int kKvBytes = kTile * kDimV * 2;              // f16 V tile (also the epilogue's O staging)
constexpr int kQnBytes = kHeads * kDimV * 2;             // f16 Q (512 dims)
constexpr int kQrBytes = kHeads * (kDimQk - kDimV) * 2;  // bf16 Q RoPE
constexpr int kPBytes = kHeads * kTile * 2;              // f16 P

// Named barriers (0 is __syncthreads): per warpgroup, the math warps, and per ring slot s
// "empty" (the math warps arrive once they have read it; the producers wait before refilling).
// A slot's arrival is an mbarrier (the bulk copies complete it).
constexpr int kBarMath = 3;
constexpr int kBarEmpty = 4;   // + slot (stages <= 2)
constexpr int kBarVFree = 7;   // producer conversion: the math warps' O^T is done with the f16 tile
constexpr int kBarVReady = 8;  // ... and the producers' part of it is written
constexpr int kBarInit = 9;    // the producers arrive once the ring's mbarriers are initialised
constexpr int kBarProd = 10;   // the third warpgroup, after that initialisation

// Shared memory matrix descriptor without swizzling (core matrices of 8 rows x 16 bytes, each
// 128 contiguous bytes): start address, leading and stride byte offsets, all in 16-byte units.
// Built once per operand; a byte offset within the operand is then one add to the address
// field (`at`), which never carries out of it (shared memory ends below 2^18 bytes).
__device__ __forceinline__ std::uint64_t smem_desc(const void* p, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((smem_addr(p) & 0x3ffffu) >> 4) | (static_cast<std::uint64_t>(lbo >> 4) << 16) |
         (static_cast<std::uint64_t>(sbo >> 4) << 32);
}
__device__ __forceinline__ std::uint64_t at(std::uint64_t desc, std::uint32_t byte_offset) {
  return desc + (byte_offset >> 4);
}
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
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
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

// Thread block clusters: a barrier of every thread of the cluster (release / acquire: the shared
// memory written before the arrival is seen by every CTA after the wait), in one or in two parts,
// this CTA's rank, and stores to and loads from the shared memory of CTA `rank` at the place of a
// local address.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() { cluster_arrive(), cluster_wait(); }
__device__ __forceinline__ int cluster_rank() {
  int r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ std::uint32_t cluster_addr(const void* p, int rank) {
  std::uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_cluster(std::uint32_t addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ float4 ld_cluster4(std::uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// d (64 x 32, f32) += A (64 x 16) * B (16 x 32, K-major): A K-major (kTransA 0) or M-major (1).
#define ABTRACK_WGMMA_N32(TYPE, TRANS_A)                                                                            \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                    \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TYPE "." TYPE                                                   \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, " TRANS_A ", 0;\n}\n"           \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])                    \
      : "l"(a), "l"(b))
__device__ __forceinline__ void wgmma_n32_ta_f16(float (&d)[16], std::uint64_t a, std::uint64_t b) {
  ABTRACK_WGMMA_N32("f16", "1");
}
#undef ABTRACK_WGMMA_N32
// d (64 x 32, f32) += A (64 x 16, this thread's fragment in registers) * B (16 x 32, K-major).
#define ABTRACK_WGMMA_N32_RS(TYPE)                                                                                  \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                    \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TYPE "." TYPE                                                   \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])                    \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b))
__device__ __forceinline__ void wgmma_n32_rs_f16(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b) {
  ABTRACK_WGMMA_N32_RS("f16");
}
__device__ __forceinline__ void wgmma_n32_rs_bf16(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b) {
  ABTRACK_WGMMA_N32_RS("bf16");
}
#undef ABTRACK_WGMMA_N32_RS

// Q and the f16 tile keep each block of 16 dims as its 8 even dims, then its 8 odd ones: the
// order in which a thread's A fragment holds them (one 4-byte load of e4m3 values, turned into
// an even and an odd f16x2 by the bit trick, are k 2 t4, 2 t4 + 1 and k 2 t4 + 8, 2 t4 + 9).
// Position p of a 16-position block holds dim (p & 7) * 2 + (p >> 3): so O^T's accumulator rows
// g and g + 8 are dims 2 g and 2 g + 1 (the epilogue writes them as one bf16 pair).
__device__ __forceinline__ std::uint32_t ld_u32(const std::uint8_t* p) {
  return *reinterpret_cast<const std::uint32_t*>(p);
}

// Four e4m3 values (one word) as f16 * 2^-8, exact, subnormals included: the even bytes (dims 0,
// 2) and the odd bytes (dims 1, 3) as two f16x2 words.
__device__ __forceinline__ void e4m3x4_to_f16(std::uint32_t w, std::uint32_t& even, std::uint32_t& odd) {
  even = ((w << 8) & 0x80008000u) | ((w << 7) & 0x3f803f80u);
  odd = (w & 0x80008000u) | ((w >> 1) & 0x3f803f80u);
}
__device__ __forceinline__ std::uint32_t h2_u32(__half2 v) { return *reinterpret_cast<std::uint32_t*>(&v); }
__device__ __forceinline__ std::uint32_t hmul2_u32(std::uint32_t a, __half2 s) {
  __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), s);
  return *reinterpret_cast<std::uint32_t*>(&r);
}
// The group scales of a thread's two token rows (raw rows row0, row1), groups 2 w and 2 w + 1,
// as f16x2 times 2^8 (rounded once): s0 for row0, s1 for row1, indexed by the group of the pair.
struct PairScales {
  __half2 s0[2], s1[2];
};
__device__ __forceinline__ PairScales pair_scales(const std::uint8_t* row0, const std::uint8_t* row1, int w) {
  const float2 f0 = *reinterpret_cast<const float2*>(row0 + kDimV + 8 * w);
  const float2 f1 = *reinterpret_cast<const float2*>(row1 + kDimV + 8 * w);
  return PairScales{{__float2half2_rn(f0.x * 256.0f), __float2half2_rn(f0.y * 256.0f)},
                    {__float2half2_rn(f1.x * 256.0f), __float2half2_rn(f1.y * 256.0f)}};
}
// One k-step of the two rows (four e4m3 values at k0 and at k1) as f16 times its group's scale,
// in the A fragment's order: row0 even dims, row1 even, row0 odd, row1 odd.
__device__ __forceinline__ void convert_kstep(const std::uint8_t* k0, const std::uint8_t* k1, __half2 s0, __half2 s1,
                                              std::uint32_t (&f)[4]) {
  std::uint32_t e0, o0, e1, o1;
  e4m3x4_to_f16(ld_u32(k0), e0, o0);
  e4m3x4_to_f16(ld_u32(k1), e1, o1);
  f[0] = hmul2_u32(e0, s0);
  f[1] = hmul2_u32(e1, s1);
  f[2] = hmul2_u32(o0, s0);
  f[3] = hmul2_u32(o1, s1);
}
// Four 8 x 8 f16 matrices from a warp's fragments (register i of every lane: matrix i, row
// lane / 4, columns 2 (lane % 4) and + 1), each to 8 rows of 16 bytes; lane l gives the address
// of row l % 8 of matrix l / 8. The V tile's k-steps and P are stored so: one instruction where
// plain stores take 4 (V) and 8 (P). Against plain stores (with the 16-byte partial swap below;
// 5 repetitions): B=64 h=32 44.75 -> 44.59 us, B=128 76.18 -> 75.09,
// h=64 74.98 -> 73.42, B=16 26.46 -> 26.34.
__device__ __forceinline__ void stsm_x4(std::uint32_t addr, const std::uint32_t (&f)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(f[0]), "r"(f[1]),
               "r"(f[2]), "r"(f[3])
               : "memory");
}
// The same, each matrix transposed (stored row c = the fragment's column c).
__device__ __forceinline__ void stsm_x4_trans(std::uint32_t addr, const std::uint32_t (&f)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(f[0]),
               "r"(f[1]), "r"(f[2]), "r"(f[3])
               : "memory");
}
__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// Lane l's row address for stsm_x4 of a k-step of the f16 V tile at d (its token block's even
// positions; the second token block 128 bytes on, the odd positions 1024): matrix l / 8 at
// d + 128 (l / 8 % 2) + 1024 (l / 16), its row l % 8 16 bytes apart.
__device__ __forceinline__ std::uint32_t stsm_kstep_addr(const std::uint8_t* d, int lane) {
  return smem_u32(d + ((lane >> 3) & 1) * 128 + (lane >> 4) * 1024 + (lane & 7) * 16);
}
// Diagnostic build only (-DABTRACK_WGMMA_PHASES, tools/diag.sh): clock64 time per phase of the
// tile loop, summed over tiles and written by thread 0 of each math warpgroup of CTA (0, 0, 0),
// cycle stamps through the prologue and the epilogue, and every CTA's start, end and length
// (print_wgmma_phases prints them). In other builds a Probe does nothing.
#ifdef ABTRACK_WGMMA_PHASES
__device__ long long g_wgmma_phases[2][9];  // (a printf in the kernel would serialize its wgmma)
// Every CTA's start and end (%globaltimer, ns) and its length in its SM's cycles, by CTA index.
constexpr int kSpanCtas = 4096;
__device__ unsigned long long g_cta_span[kSpanCtas][3];
__device__ unsigned g_cta_count;
// Cycles since the kernel started at points of the prologue and the epilogue, by thread 0 of
// CTA (0, 0, 0) (see the uses of Probe::stamp).
constexpr int kStamps = 18;
__device__ long long g_stamps[kStamps];
struct Probe {
  long long phase[8];
  long long t, clock0;
  unsigned long long t0;
  __device__ __forceinline__ Probe() {
    for (int i = 0; i < 8; ++i) phase[i] = 0;
    t = clock0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  }
  // The cycles since the last lap, to loop phase i.
  __device__ __forceinline__ void lap(int i) {
    const long long now = clock64();
    phase[i] += now - t;
    t = now;
  }
  // Stamp k: the cycles since the kernel started, by thread `thread` of CTA (0, 0, 0).
  __device__ __forceinline__ void stamp(int k, int tid, int thread = 0) const {
    if (tid == thread && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) g_stamps[k] = clock64() - clock0;
  }
  // The loop's phases of math warpgroup wg, by its first thread of CTA (0, 0, 0).
  __device__ __forceinline__ void store_phases(int wg, int tid, int n_tiles) const {
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && (tid & 127) == 0) {
      for (int i = 0; i < 8; ++i) g_wgmma_phases[wg][i] = phase[i];
      g_wgmma_phases[wg][8] = n_tiles;
    }
  }
  // The CTA's span into g_cta_span, by thread 0 where the kernel ends.
  __device__ __forceinline__ void cta_span(int tid) const {
    if (tid == 0) {
      unsigned long long t1;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
      const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
      if (cta < kSpanCtas) {
        g_cta_span[cta][0] = t0;
        g_cta_span[cta][1] = t1;
        g_cta_span[cta][2] = static_cast<unsigned long long>(clock64() - clock0);
        atomicMax(&g_cta_count, cta + 1);
      }
    }
  }
};
#else
struct Probe {
  __device__ __forceinline__ void lap(int) {}
  __device__ __forceinline__ void stamp(int, int, int = 0) const {}
  __device__ __forceinline__ void store_phases(int, int, int) const {}
  __device__ __forceinline__ void cta_span(int) const {}
};
#endif

// The wgmma kernel's split partials (normalized O, bounded by the V values the f16 V tile holds)
// as f16, in the first half of the f32 partial buffer: half the bytes the last CTA reads
// (side by side with f32: B=16 (8 splits) 26.17 -> 25.05 us, B=64 with 4 splits
// 61.72 -> 60.12; rel_err 1.68 -> 1.69e-3).
__device__ __forceinline__ __half* part_o16(const KernelParams& p) { return reinterpret_cast<__half*>(p.part_o); }

// The splits' combine, done by the last CTA of a (batch row, head block) to finish instead of a
// combine kernel (no second launch; the partials are still in L2). Each CTA has written its
// partial O (normalized, f16) and lse (log2); a fence, then one atomic count per CTA; the CTA that
// counts last combines them as combine_kernel_impl does and sets the count back to zero for the
// next launch. `weights` (32 x splits floats) and `flag` are shared memory the CTA is done with.
__device__ void combine_if_last(const KernelParams& p, int b, int head0, float* weights, int* flag, int tid) {
  __threadfence();  // this CTA's partials are visible before its count
  named_sync(kBarMath, kMathThreads);
  int* done = p.done + static_cast<std::size_t>(b) * gridDim.y + blockIdx.y;
  if (tid == 0) *flag = atomicAdd(done, 1) == p.splits - 1;
  named_sync(kBarMath, kMathThreads);
  if (!*flag) return;
  __threadfence();  // the other CTAs' partials, seen through their counts
  const int splits = p.splits;
  // The splits' lse (log2) of each head, all loads at once, then each head's weights in place.
  for (int k = tid; k < kHeads * splits; k += kMathThreads) {
    const int h = k / splits, s = k % splits;
    weights[k] = head0 + h < p.heads
                     ? __ldcg(p.part_lse + (static_cast<std::size_t>(b) * splits + s) * p.heads + head0 + h)
                     : -INFINITY;
  }
  named_sync(kBarMath, kMathThreads);
  if (tid < kHeads) {
    float* w = weights + tid * splits;
    float big = -INFINITY;
    for (int s = 0; s < splits; ++s) big = fmaxf(big, w[s]);
    if (big == -INFINITY) big = 0.0f;
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += exp2f(w[s] - big);
    const float lse2 = big + log2f(sum);
    for (int s = 0; s < splits; ++s) w[s] = sum > 0.0f ? exp2f(w[s] - lse2) : 0.0f;
    if (head0 + tid < p.heads)
      p.lse[static_cast<std::size_t>(b) * p.heads + head0 + tid] = sum > 0.0f ? lse2 * 0.69314718055994531f : INFINITY;
    if (tid == 0) *done = 0;
  }
  named_sync(kBarMath, kMathThreads);
  // Thread t combines dims 4 (t % 128) .. + 3 of heads 2 j + t / 128, j = 0..15: per split its 16
  // loads are issued together (the L2 latency is paid once per split, not once per load).
  const int col = (tid & 127) * 4, hh = tid >> 7;
  float4 o[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) o[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int s = 0; s < splits; ++s) {
    float4 v[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int h = 2 * j + hh;
      const uint2 u =
          head0 + h < p.heads
              ? __ldcg(reinterpret_cast<const uint2*>(
                    part_o16(p) + ((static_cast<std::size_t>(b) * splits + s) * p.heads + head0 + h) * kDimV + col))
              : make_uint2(0, 0);
      const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
      const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
      v[j] = make_float4(lo.x, lo.y, hi.x, hi.y);
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const float w = weights[(2 * j + hh) * splits + s];  // 0 for heads past p.heads
      o[j].x += w * v[j].x;
      o[j].y += w * v[j].y;
      o[j].z += w * v[j].z;
      o[j].w += w * v[j].w;
    }
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int h = 2 * j + hh;
    if (head0 + h < p.heads)
      *reinterpret_cast<uint2*>(p.out + (static_cast<std::size_t>(b) * p.heads + head0 + h) * kDimV + col) =
          make_uint2(as_u32(__floats2bfloat162_rn(o[j].x, o[j].y)), as_u32(__floats2bfloat162_rn(o[j].z, o[j].w)));
  }
}

// The kernel, phase by phase. decode_wgmma_impl (below) carves shared memory, runs the prologue,
// hands the third warpgroup to `producer` and runs the tile loop and the epilogue in the two math
// warpgroups; each phase is one __forceinline__ function, so the kernel compiles to the code of a
// single body. Shared memory pointers are passed one by one (a struct of them gave ptxas slightly
// different code), each phase taking the buffers it touches.

// This thread's place: warpgroup wg (0, 1: the math; 2: the producers), its warp wl within it (the
// accumulator rows 16 wl .. 16 wl + 15), and the fragment coordinates g (lane / 4), t4 (lane % 4).
struct Thread {
  int tid, warp, lane, wg, wl, g, t4;
};
__device__ __forceinline__ Thread this_thread() {
  Thread t;
  t.tid = threadIdx.x;
  t.warp = t.tid >> 5;
  t.lane = t.tid & 31;
  // The warpgroup, through a shuffle so that the compiler knows it is warp-uniform: the operand
  // descriptors derived from it then live in uniform registers (no R2UR moves before each wgmma).
  t.wg = __shfl_sync(0xffffffffu, t.tid >> 7, 0);
  t.wl = t.warp & 3;
  t.g = t.lane >> 2;
  t.t4 = t.lane & 3;
  return t;
}

// The split's j-th index (-1 past topk or past the split's tiles).
__device__ __forceinline__ int split_index(const KernelParams& p, const CtaWork& work, int j) {
  const int slot = work.t_first * kTile + j;
  return j < work.n_tiles * kTile && slot < p.topk ? __ldg(&p.indices[static_cast<std::size_t>(work.b) * p.topk + slot])
                                                   : -1;
}

// Prologue, math warps: their Q rows (12 loads each, converted later by q_row_scales and store_q),
// issued first so that they are in flight with the index loads. Rows past `heads` are zero.
__device__ __forceinline__ void load_q_rows(const KernelParams& p, const CtaWork& work, const Thread& th,
                                            uint4 (&qc)[4][3]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int h = th.warp * 4 + r;
    const __nv_bfloat16* q = p.q + (static_cast<std::size_t>(work.b) * p.heads + work.head0 + h) * kDimQk;
    const bool real = work.head0 + h < p.heads;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    qc[r][0] = real ? __ldg(reinterpret_cast<const uint4*>(q) + 2 * th.lane) : zero;
    qc[r][1] = real ? __ldg(reinterpret_cast<const uint4*>(q) + 2 * th.lane + 1) : zero;
    qc[r][2] = real && th.lane < 8 ? __ldg(reinterpret_cast<const uint4*>(q + kDimV) + th.lane) : zero;
  }
}

// Prologue, math warps: the split's indices (-1 past topk) in shared memory, four loads in flight
// per thread. The producers do not wait for them (a block-wide barrier here cost 0.56 us at B=16,
// 0.1 at B=64): they load the indices of their first `stages` tiles themselves and issue those
// tiles at once; idx_s is filled before the math warps arrive at the barriers that precede the
// producers' later tiles (kBarEmpty, kBarVFree).
__device__ __forceinline__ void store_indices(const KernelParams& p, std::int32_t* idx_s, const CtaWork& work,
                                              int tid) {
  for (int j0 = tid; j0 < work.n_tiles * kTile; j0 += 4 * kMathThreads) {
    int v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = split_index(p, work, j0 + u * kMathThreads);
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (j0 + u * kMathThreads < work.n_tiles * kTile) idx_s[j0 + u * kMathThreads] = v[u];
  }
}

// Prologue, producers: the ring's mbarriers, by the first producer thread, seen by the third
// warpgroup at once and by the math warps before their first wait (kBarInit).
__device__ __forceinline__ void init_ring(std::uint64_t* full_s, int stages, int tid) {
  if (tid == kMathThreads)
    for (int s = 0; s < stages; ++s) mbar_init(&full_s[s], kProducers);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  named_sync(kBarProd, 128);
  named_arrive(kBarInit, kThreads);
}

// Producer warp pw: its 16 rows of tile i into ring slot `slot`. Lane l < 16 takes row 16 pw + l:
// one 656-byte bulk copy if its index is valid, which completes the slot's mbarrier; an invalid
// row (-1) is zero-filled by plain stores before the arrival that announces the valid bytes.
__device__ __forceinline__ void issue_tile(const KernelParams& p, std::uint8_t* ring, const std::int32_t* idx_s,
                                           std::uint64_t* full_s, const CtaWork& work, int pw, int lane, int i,
                                           int slot) {
  std::uint8_t* dst = ring + slot * kStageBytes;
  const bool active = lane < kRowsPerProducer;
  const int row = pw * kRowsPerProducer + lane;
  // The first tiles' indices straight from global memory (idx_s may not be filled yet).
  const int id = !active ? -1 : i < p.stages ? split_index(p, work, i * kTile + row) : idx_s[i * kTile + row];
  const std::uint32_t valid = __popc(__ballot_sync(0xffffffffu, id >= 0));
  if (active && id < 0)
    for (int c = 0; c < kChunks; ++c)
      *reinterpret_cast<uint4*>(dst + row * kTokenBytes + 16 * c) = make_uint4(0, 0, 0, 0);
  __syncwarp();
  if (lane == 0) mbar_expect(&full_s[slot], valid * kTokenBytes);
  __syncwarp();
  if (id >= 0)
    bulk_copy_row(dst + row * kTokenBytes, p.pool + static_cast<std::size_t>(id) * kTokenBytes, &full_s[slot]);
}

// Producer conversion: k-steps 16 - kPks .. 15 of both warpgroups' halves of the f16 V tile for
// this lane's two token rows (the same lanes as the math warp of the producer warp's index).
template <int kPks>
__device__ __forceinline__ void convert_producer_ksteps(const std::uint8_t* row0, const std::uint8_t* row1,
                                                        std::uint32_t kv_pm, int t4) {
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    const PairScales sc = pair_scales(row0, row1, w);
#pragma unroll
    for (int ks = 16 - kPks; ks < 16; ++ks) {
      std::uint32_t f[4];
      convert_kstep(row0 + 256 * w + 16 * ks + 4 * t4, row1 + 256 * w + 16 * ks + 4 * t4, sc.s0[ks >> 3],
                    sc.s1[ks >> 3], f);
      stsm_x4(kv_pm + (w * 16 + ks) * 2048, f);
    }
  }
}

// The producer warpgroup: tile i's rows go to ring slot i % stages (issue_tile). A slot is
// refilled as soon as it is converted (by the math warps alone, or also by the producers), so
// `stages` tiles stay in flight. The first tile goes alone at first: every CTA of the grid starts
// at once, and the first tiles land sooner if the second ones do not compete with them for DRAM
// (the math of tile 0 hides the second tile's gather).
template <int kPks>
__device__ __forceinline__ void producer(const KernelParams& p, std::uint8_t* ring, const std::int32_t* idx_s,
                                         std::uint64_t* full_s, std::uint8_t* kv_s, const CtaWork& work,
                                         const Thread& th, bool clustered, const Probe& probe) {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs<kPks>));
  const int pw = th.warp - kMathThreads / 32;  // producer warp pw copies rows 16 pw .. 16 pw + 15
  const int stages = p.stages, n_tiles = work.n_tiles;
  if constexpr (kPks == 0) {
    int slot = 0;
    for (int i = 0; i < n_tiles; ++i) {
      if (i >= stages) named_sync(kBarEmpty + slot, kRingThreads);  // tile i - stages is converted
      if (i == 1) {
        mbar_wait(&full_s[0], 0);
        probe.stamp(16, th.tid, kMathThreads);  // the first tile landed
      }
      issue_tile(p, ring, idx_s, full_s, work, pw, th.lane, i, slot);
      slot = slot + 1 == stages ? 0 : slot + 1;
    }
  } else {
    // The producers also write k-steps 16 - kPks .. 15 of the f16 V tile, for the tokens they
    // copy (tokens 16 pw + g and + 8), once the math warps' O^T is done with it; a slot is
    // refilled once they have converted it.
    for (int i = 0; i < stages && i < n_tiles; ++i) {
      if (i == 1) {
        mbar_wait(&full_s[0], 0);
        probe.stamp(16, th.tid, kMathThreads);  // the first tile landed
      }
      issue_tile(p, ring, idx_s, full_s, work, pw, th.lane, i, i);
    }
    int slot = 0;
    std::uint32_t parity = 0;
    const std::uint32_t kv_pm = stsm_kstep_addr(kv_s + (2 * pw) * 128, th.lane);
    for (int it = 0; it < n_tiles; ++it) {
      mbar_wait(&full_s[slot], parity);
      const std::uint8_t* row0 = ring + slot * kStageBytes + (16 * pw + th.g) * kTokenBytes;
      const std::uint8_t* row1 = row0 + 8 * kTokenBytes;
      named_sync(kBarVFree, kThreads);
      convert_producer_ksteps<kPks>(row0, row1, kv_pm, th.t4);
      fence_async_smem();
      named_arrive(kBarVReady, kThreads);
      if (it + stages < n_tiles) issue_tile(p, ring, idx_s, full_s, work, pw, th.lane, it + stages, slot);
      slot = slot + 1 == stages ? 0 : slot + 1;
      parity ^= slot == 0 ? 1u : 0u;
    }
  }
  if (clustered) cluster_wait(), cluster_sync(), cluster_sync();  // as the math warps do
}

// Q while the first tiles land, part 1: each head row's scale c_h = 2^(15 - e), max|q| < 2^e, so
// that the row's largest value lies in [2^14, 2^15) (f16's range, full precision); 1 / c_h to
// qinv_s. A warp does 4 rows: this lane's part of each row, then per row over the warp.
__device__ __forceinline__ void q_row_scales(const uint4 (&qc)[4][3], float* qinv_s, const Thread& th,
                                             float (&cs_row)[4], const Probe& probe) {
  float part[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    float big = 0.0f;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t w[4] = {qc[r][k].x, qc[r][k].y, qc[r][k].z, qc[r][k].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(as_bf162(w[i]));
        big = fmaxf(big, fmaxf(fabsf(f.x), fabsf(f.y)));
      }
    }
    part[r] = big;
  }
#pragma unroll
  for (int R = 0; R < 4; ++R) {
    float big = part[R];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, o));
    if (R == 0) probe.stamp(15, th.tid);  // the first Q row's maximum: its loads have returned
    int e = 0;
    frexpf(big, &e);
    cs_row[R] = big > 0.0f && isfinite(big) ? ldexpf(1.0f, 15 - e) : 1.0f;
    if (th.lane == 0) qinv_s[th.warp * 4 + R] = 1.0f / cs_row[R];
  }
}

// Q, part 2: the rows times c_h to shared memory, the 512 latent dims as f16 (qn_s), the RoPE
// dims as bf16 (qr_s, exact: a power of two). Lane l converts dims 16 l .. 16 l + 15 (and RoPE
// chunk l < 8). (Lane l converting row (r + l) % 4 at step r, against the 32-way bank conflicts
// of the stores below, was 1.0-1.5 us slower at every shape.)
__device__ __forceinline__ void store_q(const uint4 (&qc)[4][3], const float (&cs_row)[4], std::uint8_t* qn_s,
                                        std::uint8_t* qr_s, const Thread& th) {
  const int lane = th.lane;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int h = th.warp * 4 + r;
    const uint4(&c)[3] = qc[r];
    const float cs = cs_row[r];
    {
      // dims 16 lane .. 16 lane + 15: the even ones to position block 2 lane, the odd ones to 2 lane + 1
      __half2 even[4], odd[4];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const std::uint32_t w[4] = {c[k].x, c[k].y, c[k].z, c[k].w};
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const float2 f0 = __bfloat1622float2(as_bf162(w[2 * i]));
          const float2 f1 = __bfloat1622float2(as_bf162(w[2 * i + 1]));
          even[2 * k + i] = __floats2half2_rn(f0.x * cs, f1.x * cs);
          odd[2 * k + i] = __floats2half2_rn(f0.y * cs, f1.y * cs);
        }
      }
      *reinterpret_cast<uint4*>(qn_s + (2 * lane * 4 + h / 8) * 128 + (h % 8) * 16) = *reinterpret_cast<uint4*>(even);
      *reinterpret_cast<uint4*>(qn_s + ((2 * lane + 1) * 4 + h / 8) * 128 + (h % 8) * 16) =
          *reinterpret_cast<uint4*>(odd);
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
}

// Tile loop, K: straight from the raw rows of `stage` into this thread's A fragments (warpgroup w:
// dims 256 w .., 16 k-steps, and RoPE steps 2 w, 2 w + 1; tokens t0 = 16 wl + g and t0 + 8): per
// k-step one 4-byte load of e4m3 values per token (conflict-free: rows are 164 words apart), the
// bit trick, times the group's scale. Nothing is written yet: the f16 tile is still being read by
// O^T of the previous tile.
__device__ __forceinline__ void load_k(const std::uint8_t* stage, const Thread& th, int t0, std::uint32_t (&a)[16][4],
                                       std::uint32_t (&ra)[2][4]) {
  const int wg = th.wg, t4 = th.t4;
  const std::uint8_t* row0 = stage + t0 * kTokenBytes;
  const std::uint8_t* row1 = row0 + 8 * kTokenBytes;
  const PairScales sc = pair_scales(row0, row1, wg);
  const std::uint8_t* k0 = row0 + 256 * wg + 4 * t4;
  const std::uint8_t* k1 = row1 + 256 * wg + 4 * t4;
#pragma unroll
  for (int ks = 0; ks < 16; ++ks) convert_kstep(k0 + 16 * ks, k1 + 16 * ks, sc.s0[ks >> 3], sc.s1[ks >> 3], a[ks]);
  const std::uint8_t* r0 = row0 + kRopeOffset + 64 * wg + 4 * t4;
  const std::uint8_t* r1 = row1 + kRopeOffset + 64 * wg + 4 * t4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    ra[r][0] = ld_u32(r0 + 32 * r);
    ra[r][1] = ld_u32(r1 + 32 * r);
    ra[r][2] = ld_u32(r0 + 32 * r + 16);
    ra[r][3] = ld_u32(r1 + 32 * r + 16);
  }
}

// Tile loop, scores: S^T split over k between the warpgroups, all 32 heads each (warpgroup w the
// f16 k-steps 16 w .. 16 w + 15 and the bf16 RoPE steps 2 w, 2 w + 1: the same instruction stream
// for both, a branch around wgmma serializes it); queued behind O^T of the previous tile. Issued
// and committed, not waited for.
__device__ __forceinline__ void issue_scores(const std::uint32_t (&a)[16][4], const std::uint32_t (&ra)[2][4],
                                             std::uint64_t q_desc, std::uint64_t qr_desc, float (&sfull)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) sfull[i] = 0.0f;
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < 16; ++ks) wgmma_n32_rs_f16(sfull, a[ks], at(q_desc, ks * 1024));
#pragma unroll
  for (int r = 0; r < 2; ++r) wgmma_n32_rs_bf16(sfull, ra[r], at(qr_desc, r * 1024));
  wgmma_commit();
}

// Tile loop, once S^T and the previous O^T are done: the f16 V tile for this tile's O^T (this
// warpgroup's positions, which only its own O^T reads; one stmatrix of a warp fills four 128-byte
// core matrices; the producers write the last kPks k-steps), then the S^T partials swapped: each
// warpgroup keeps its 16 heads (accumulator n-tiles 2 wg, 2 wg + 1) and adds the other's partial
// for them, through shared memory in accumulator order (the same thread of the other warpgroup
// holds the same rows and columns).
template <int kPks>
__device__ __forceinline__ void store_v_and_swap(const std::uint32_t (&a)[16][4], const float (&sfull)[16],
                                                 std::uint32_t kv_m, float* xchg_s, int* flag_s, const Thread& th,
                                                 int it, float (&sacc)[8]) {
  if (kPks > 0) named_arrive(kBarVFree, kThreads);  // the producers write their k-steps now
#pragma unroll
  for (int ks = 0; ks < 16 - kPks; ++ks) stsm_x4(kv_m + ks * 2048, a[ks]);
  const int wg = th.wg;
  const int wt = th.tid & 127;
  // (16-byte vectors: 0.1-0.5 us faster than 4-byte words)
  float4* const xchg4 = reinterpret_cast<float4*>(xchg_s);  // [2 wg][2 halves][128 threads]
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = wg ? sfull[4 * q + i] : sfull[8 + 4 * q + i];
    xchg4[(wg * 2 + q) * 128 + wt] = make_float4(v[0], v[1], v[2], v[3]);
  }
  named_sync(kBarMath, kMathThreads);         // also: both warpgroups' O^T of the previous tile is done (P, alpha free)
  if (th.tid == 0) flag_s[(it + 1) & 1] = 0;  // the previous tile's flag, read by every math thread before this barrier
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const float4 v = xchg4[((1 - wg) * 2 + q) * 128 + wt];
    const float o[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) sacc[4 * q + i] = (wg ? sfull[8 + 4 * q + i] : sfull[4 * q + i]) + o[i];
  }
}

// All of a thread's P at once: matrix (head block j, row block) holds the column pairs
// (c = 2 j, 2 j + 1) of rows r0 (pr[2 c]) and r0 + 8 (pr[2 c + 1]).
__device__ __forceinline__ void store_p4(std::uint32_t p_m, const float (&pr)[8]) {
  const std::uint32_t f[4] = {h2_u32(__floats2half2_rn(pr[0], pr[2])), h2_u32(__floats2half2_rn(pr[1], pr[3])),
                              h2_u32(__floats2half2_rn(pr[4], pr[6])), h2_u32(__floats2half2_rn(pr[5], pr[7]))};
  stsm_x4_trans(p_m, f);
}

// Softmax, the rare path (some column's maximum moved by more than 2^8, and on the first tile):
// the column maxima reduced (over g by shuffles, over the warps in shared memory), the maxima
// moved, P written again, l scaled and alpha written, behind one more barrier of the math warps.
__device__ __forceinline__ void rescale_columns(const float (&x)[8], float (&cmax)[4], float (&pr)[8],
                                                float (&m_run)[4], float (&l_part)[4], float* red_s, float* alpha_s,
                                                std::uint32_t p_m, const Thread& th) {
  const int wg = th.wg, wl = th.wl, g = th.g, t4 = th.t4;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) cmax[c] = fmaxf(cmax[c], __shfl_xor_sync(0xffffffffu, cmax[c], o));
    if (g == 0) red_s[(wg * 4 + wl) * 16 + 8 * (c >> 1) + 2 * t4 + (c & 1)] = cmax[c];
  }
  warpgroup_barrier(1 + wg);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int j = c >> 1, e = c & 1;
    const int col = 8 * j + 2 * t4 + e;
    float tmax = kMinusBig;
#pragma unroll
    for (int w = 0; w < 4; ++w) tmax = fmaxf(tmax, red_s[(wg * 4 + w) * 16 + col]);
    const float m_new = tmax > m_run[c] + kRescaleLog2 ? tmax : m_run[c];
    const float alpha = m_new == m_run[c] ? 1.0f : fast_exp2(m_run[c] - m_new);
    if (m_new != m_run[c]) {
      pr[2 * c] = fast_exp2(x[4 * j + e] - m_new);
      pr[2 * c + 1] = fast_exp2(x[4 * j + 2 + e] - m_new);
    }
    l_part[c] *= alpha;
    m_run[c] = m_new;
    if (wl == 0 && g == 0) alpha_s[16 * wg + col] = alpha;
  }
  store_p4(p_m, pr);
  fence_async_smem();
  named_sync(kBarMath, kMathThreads);  // P and alpha written again
}

// Tile loop, softmax: online over the tile's 64 tokens (rows) for each of the 16 heads (columns)
// of this warpgroup: a thread holds rows 16 wl + g and + 8 of columns 8 j + 2 t4 + e. Lazy
// rescaling as in the mma kernels: a column's maximum moves only when a score exceeds it by more
// than 2^8, which after the first tile is rare. So P is written with the running maxima at once,
// and a thread with such a score sets this tile's flag in shared memory; after the barrier before
// O^T, where the flag is set (both warpgroups see the same), rescale_columns runs. l is kept per
// thread and reduced once, in the epilogue. Returns whether the flag was set (alpha_s written).
template <int kPks>
__device__ __forceinline__ bool softmax(const float (&sacc)[8], const float (&qinv)[4], const std::int32_t* tile_idx,
                                        float (&m_run)[4], float (&l_part)[4], float* red_s, float* alpha_s,
                                        int* flag_s, std::uint32_t p_m, const Thread& th, int it, Probe& probe) {
  const int r0 = 16 * th.wl + th.g;
  const bool v0 = tile_idx[r0] >= 0, v1 = tile_idx[r0 + 8] >= 0;
  float x[8], cmax[4], pr[8];
  bool up = false;  // a score of this thread's exceeds its column's running maximum by > 2^8
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int j = c >> 1, e = c & 1;
    x[4 * j + e] = v0 ? sacc[4 * j + e] * qinv[c] : -INFINITY;
    x[4 * j + 2 + e] = v1 ? sacc[4 * j + 2 + e] * qinv[c] : -INFINITY;
    cmax[c] = fmaxf(x[4 * j + e], x[4 * j + 2 + e]);
    up = up || cmax[c] > m_run[c] + kRescaleLog2;
    pr[2 * c] = fast_exp2(x[4 * j + e] - m_run[c]);  // (inf where up: written again below)
    pr[2 * c + 1] = fast_exp2(x[4 * j + 2 + e] - m_run[c]);
  }
  store_p4(p_m, pr);
  if (up) flag_s[it & 1] = 1;
  probe.lap(4);
  fence_async_smem();
  if (kPks > 0) named_sync(kBarVReady, kThreads);  // P, the flag and the f16 tile complete (the producers' k-steps too)
  else named_sync(kBarMath, kMathThreads);         // P, the flag and the f16 tile complete
  const bool rescale_any = flag_s[it & 1] != 0;
  if (rescale_any) rescale_columns(x, cmax, pr, m_run, l_part, red_s, alpha_s, p_m, th);
#pragma unroll
  for (int c = 0; c < 4; ++c) l_part[c] += pr[2 * c] + pr[2 * c + 1];
  return rescale_any;
}

// Tile loop, output: O^T = O^T * alpha + V^T P^T for this warpgroup's 256 positions (4 m-blocks
// x 4 k-steps), left running: the next tile's loads and conversion overlap it. O^T is scaled only
// where some alpha of the warp is not 1 (alpha_s holds this tile's only if a head moved).
__device__ __forceinline__ void issue_output(const float* alpha_s, bool rescale_any, std::uint64_t v_desc,
                                             std::uint64_t p_desc, int t4, float (&oacc)[4][16]) {
  float al[8] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  if (rescale_any)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      al[2 * j] = alpha_s[8 * j + 2 * t4];
      al[2 * j + 1] = alpha_s[8 * j + 2 * t4 + 1];
    }
  bool ones = true;
#pragma unroll
  for (int i = 0; i < 8; ++i) ones = ones && al[i] == 1.0f;
  if (rescale_any && !__all_sync(0xffffffffu, ones)) {
#pragma unroll
    for (int mb = 0; mb < 4; ++mb)
#pragma unroll
      for (int i = 0; i < 16; ++i) oacc[mb][i] *= al[2 * (i >> 2) + (i & 1)];
  }
  wgmma_fence();
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      wgmma_n32_ta_f16(oacc[mb], at(v_desc, mb * 8 * 1024 + ks * 256), at(p_desc, ks * 1024));
  wgmma_commit();
}

// Epilogue, l: reduced over rows (g by shuffles, warps in shared memory), with m per head in m_s
// and l in l_s. In a cluster each CTA then pushes its m and l into every CTA's peer_ml_s[rank]:
// remote stores, which nobody waits for (the cluster barrier of cluster_combine makes them
// visible), instead of the combine's weights loading them from the other CTAs after that barrier
// (0.2 us faster at B=64 h=32). Otherwise lse (one split) or the split's lse (log2) is written.
template <int kClusterSplits>
__device__ __forceinline__ void reduce_l(const KernelParams& p, const CtaWork& work, float (&l_part)[4],
                                         const float (&m_run)[4], float* red_s, float* m_s, float* l_s,
                                         float* peer_ml_s, const Thread& th, bool clustered) {
  const int tid = th.tid, wg = th.wg, wl = th.wl, g = th.g, t4 = th.t4;
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) l_part[c] += __shfl_xor_sync(0xffffffffu, l_part[c], o);
  named_sync(kBarMath, kMathThreads);  // every math warp is done with red_s and the tiles
  if (g == 0) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int col = 8 * (c >> 1) + 2 * t4 + (c & 1);
      red_s[(wg * 4 + wl) * 16 + col] = l_part[c];
      if (wl == 0) m_s[16 * wg + col] = m_run[c];
    }
  }
  named_sync(kBarMath, kMathThreads);
  if (clustered) cluster_wait();  // every CTA of the cluster has started (the arrival at the start)
  if (tid < kHeads) {
    const int wgh = tid >> 4, col = tid & 15;
    float l = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; ++w) l += red_s[(wgh * 4 + w) * 16 + col];
    l_s[tid] = l;
    if (clustered) {
      const int splits = kClusterSplits > 0 ? kClusterSplits : p.splits;
      const int rank = cluster_rank();
      const float m = m_s[tid];
      for (int k = 0; k < splits; ++k) {
        st_cluster(cluster_addr(peer_ml_s + rank * 2 * kHeads + tid, k), m);
        st_cluster(cluster_addr(peer_ml_s + (rank * 2 + 1) * kHeads + tid, k), l);
      }
    }
    if (work.head0 + tid < p.heads && !clustered) {
      const float lse2 = m_s[tid] + log2f(l);
      const std::size_t bh = static_cast<std::size_t>(work.b) * p.heads + work.head0 + tid;
      if (p.splits == 1) p.lse[bh] = l > 0.0f ? lse2 * 0.69314718055994531f : INFINITY;
      else
        p.part_lse[(static_cast<std::size_t>(work.b) * p.splits + work.split) * p.heads + work.head0 + tid] =
            l > 0.0f ? lse2 : -INFINITY;
    }
  }
}

// Cluster combine, the weights: per head (thread tid < 32) and split k, exp2(m_k - M) / L into
// wts[head][split]; rank 0 writes lse.
__device__ __forceinline__ void cluster_weights(const KernelParams& p, const CtaWork& work, const float* peer_ml_s,
                                                float* wts, int splits, int rank, int tid) {
  float mk[8], lk[8], big = kMinusBig;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    mk[k] = k < splits ? peer_ml_s[k * 2 * kHeads + tid] : kMinusBig;
    lk[k] = k < splits ? peer_ml_s[(k * 2 + 1) * kHeads + tid] : 0.0f;
    big = fmaxf(big, mk[k]);
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 8; ++k) sum += exp2f(mk[k] - big) * lk[k];
#pragma unroll
  for (int k = 0; k < 8; ++k)
    if (k < splits) wts[tid * splits + k] = sum > 0.0f ? exp2f(mk[k] - big) / sum : 0.0f;
  if (rank == 0 && work.head0 + tid < p.heads)
    p.lse[static_cast<std::size_t>(work.b) * p.heads + work.head0 + tid] =
        sum > 0.0f ? (big + log2f(sum)) * 0.69314718055994531f : INFINITY;
}

// Epilogue with the splits as the CTAs of this cluster (2, 4 or 8). Each stages the accumulator
// blocks the others own in its V-tile space, in their own order (float4 q of block (wg, mb) at
// [(wg * 4 + mb) * 4 + q][thread]: conflict-free); then each CTA combines its share of the blocks
// (the threads that hold them in registers read the same thread's values of the other CTAs) with
// weights per head and split, and stores them as bf16.
template <int kClusterSplits>
__device__ __forceinline__ void cluster_combine(const KernelParams& p, const CtaWork& work, float (&oacc)[4][16],
                                                std::uint8_t* kv_s, std::uint8_t* p_s, const float* peer_ml_s,
                                                const Thread& th, const Probe& probe) {
  const int tid = th.tid, wg = th.wg, t4 = th.t4;
  const int d_thread = 256 * wg + 16 * th.wl + 2 * th.g;  // + 64 mb: this thread's even dims
  const int splits = kClusterSplits > 0 ? kClusterSplits : p.splits;
  const int rank = cluster_rank();
  float4* stage4 = reinterpret_cast<float4*>(kv_s);
  const int wt = tid & 127;
  // This CTA's blocks (the others' are staged): with up to 4 splits m-blocks mb * splits / 4 ==
  // rank of both warpgroups, with 8 one block.
  bool mine[4];
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
    mine[mb] = splits <= 4 ? mb * splits / 4 == rank : (mb == rank >> 1 && wg == (rank & 1));
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
    if (!mine[mb])
#pragma unroll
      for (int q = 0; q < 4; ++q)
        stage4[((wg * 4 + mb) * 4 + q) * 128 + wt] =
            make_float4(oacc[mb][4 * q], oacc[mb][4 * q + 1], oacc[mb][4 * q + 2], oacc[mb][4 * q + 3]);
  probe.stamp(6, tid);  // accumulators staged
  cluster_sync();       // every CTA's accumulators, m_s and l_s
  probe.stamp(7, tid);
  float* wts = reinterpret_cast<float*>(p_s);  // [head][split]: exp2(m_k - M) / L
  if (tid < kHeads) cluster_weights(p, work, peer_ml_s, wts, splits, rank, tid);
  named_sync(kBarMath, kMathThreads);
  probe.stamp(13, tid);  // weights
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
    if (mine[mb])
#pragma unroll
      for (int i = 0; i < 16; ++i) oacc[mb][i] *= wts[(8 * (i >> 2) + 2 * t4 + (i & 1)) * splits + rank];
#pragma unroll
  for (int mb = 0; mb < 4; ++mb) {
    if (!mine[mb]) continue;
#pragma unroll 1
    for (int k = 0; k < splits; ++k) {
      if (k == rank) continue;
      const std::uint32_t base = cluster_addr(stage4 + (wg * 4 + mb) * 4 * 128 + wt, k);
      float4 v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) v[q] = ld_cluster4(base + q * 128 * 16);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float w0 = wts[(8 * q + 2 * t4) * splits + k], w1 = wts[(8 * q + 2 * t4 + 1) * splits + k];
        oacc[mb][4 * q] += w0 * v[q].x;
        oacc[mb][4 * q + 1] += w1 * v[q].y;
        oacc[mb][4 * q + 2] += w0 * v[q].z;
        oacc[mb][4 * q + 3] += w1 * v[q].w;
      }
    }
  }
  probe.stamp(14, tid);  // the others' blocks added
  // Done reading the other CTAs: the arrival now, the wait (that they are done reading this
  // one) only before the CTA leaves, so the stores below overlap the slower CTA's reads
  // (CTA 0's wait at the second barrier: 1.5 K cycles -> 50).
  cluster_arrive();
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
    if (mine[mb])
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        if (i & 2) continue;  // i: the even dim, i + 2: the odd one
        const int head = 8 * (i >> 2) + 2 * t4 + (i & 1);
        if (work.head0 + head < p.heads)
          *reinterpret_cast<std::uint32_t*>(
              p.out + (static_cast<std::size_t>(work.b) * p.heads + work.head0 + head) * kDimV + d_thread + 64 * mb) =
              as_u32(__floats2bfloat162_rn(oacc[mb][i], oacc[mb][i + 2]));
      }
  probe.stamp(8, tid);  // combined and stored
  cluster_wait();       // the other CTAs are done reading this one's shared memory
  probe.stamp(9, tid);
}

// Epilogue without a cluster, straight from the accumulators: a thread's oacc[mb][4 j + e] and
// oacc[mb][4 j + 2 + e] are dims d0 and d0 + 1 (d0 = 256 wg + 64 mb + 16 wl + 2 g) of head
// 8 j + 2 t4 + e, one 4-byte pair (8 lanes write 32 contiguous bytes of a head's row): o / l as
// bf16 out with one split, else as the split's f16 partial (combine_if_last then combines them).
__device__ __forceinline__ void store_output(const KernelParams& p, const CtaWork& work, const float (&oacc)[4][16],
                                             const float* l_s, const Thread& th) {
  const int t4 = th.t4;
  const int d_thread = 256 * th.wg + 16 * th.wl + 2 * th.g;  // + 64 mb: this thread's even dims
  named_sync(kBarMath, kMathThreads);                        // l_s
  float inv[8];                                              // 1 / l of this thread's heads 8 j + 2 t4 + e, [2 j + e]
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const float l = l_s[8 * (c >> 1) + 2 * t4 + (c & 1)];
    inv[c] = l > 0.0f ? 1.0f / l : 0.0f;
  }
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i & 2) continue;  // i: the even dim, i + 2: the odd one
      const int c = 2 * (i >> 2) + (i & 1);
      const int head = 8 * (i >> 2) + 2 * t4 + (i & 1);
      if (work.head0 + head >= p.heads) continue;
      const int d = d_thread + 64 * mb;
      if (p.splits == 1) {
        *reinterpret_cast<std::uint32_t*>(
            p.out + (static_cast<std::size_t>(work.b) * p.heads + work.head0 + head) * kDimV + d) =
            as_u32(__floats2bfloat162_rn(oacc[mb][i] * inv[c], oacc[mb][i + 2] * inv[c]));
      } else {
        const std::size_t orow =
            (static_cast<std::size_t>(work.b) * p.splits + work.split) * p.heads + work.head0 + head;
        *reinterpret_cast<__half2*>(part_o16(p) + orow * kDimV + d) =
            __floats2half2_rn(oacc[mb][i] * inv[c], oacc[mb][i + 2] * inv[c]);
      }
    }
}

// The math warps' state before the first tile: O^T zero, the running maxima at kMinusBig, l zero.
__device__ __forceinline__ void zero_state(float (&oacc)[4][16], float (&m_run)[4], float (&l_part)[4]) {
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
#pragma unroll
    for (int i = 0; i < 16; ++i) oacc[mb][i] = 0.0f;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    m_run[c] = kMinusBig;
    l_part[c] = 0.0f;
  }
}

// The operands of a math thread's wgmmas and stmatrix stores, fixed for the whole tile loop.
struct Operands {
  std::uint64_t q_desc, qr_desc, v_desc, p_desc;
  std::uint32_t kv_m, p_m;
  int t0;
};
__device__ __forceinline__ Operands operands(std::uint8_t* kv_s, std::uint8_t* qn_s, std::uint8_t* qr_s,
                                             std::uint8_t* p_s, const Thread& th) {
  const int wg = th.wg;
  Operands op;
  // The operands' descriptors (no swizzling; leading, stride byte offsets), each at this
  // warpgroup's share: S^T's B = Q K-major (next 8 positions 512, next 8 heads 128; positions
  // 256 wg ..) and Q's RoPE (rope dims 32 wg ..); O^T's A = the f16 tile M-major (next 8 tokens
  // 128, next 8 positions 1024; positions 256 wg ..), B = P K-major (next 8 tokens 512, next 8
  // heads 128). S^T's A is K itself, in registers.
  op.q_desc = smem_desc(qn_s + wg * 16 * 1024, 512, 128);
  op.qr_desc = smem_desc(qr_s + wg * 2 * 1024, 512, 128);
  op.v_desc = smem_desc(kv_s + wg * 4 * 8 * 1024, 128, 1024);
  op.p_desc = smem_desc(p_s, 512, 128);
  // This thread's A rows are tokens t0 and t0 + 8; its warp's fragments of them go to the f16
  // tile by stsm_x4 at kv_m (this lane's row address; + 2048 per k-step: position block 2 k (even
  // dims), 2 k + 1 (odd dims) 1024 on, the second token block 128 on).
  op.t0 = 16 * th.wl + th.g;
  op.kv_m = stsm_kstep_addr(kv_s + wg * 16 * 2048 + (2 * th.wl) * 128, th.lane);
  // P through stsm_x4_trans: matrix l / 8 of lane l is (token block 2 wl + l / 8 % 2, head block
  // 2 wg + l / 16), its row l % 8 (a head) 16 bytes apart.
  op.p_m =
      smem_u32(p_s + (2 * th.wl + ((th.lane >> 3) & 1)) * 512 + (2 * wg + (th.lane >> 4)) * 128 + (th.lane & 7) * 16);
  return op;
}

// kPks: kProducerKs, or 0 (one stage). kClusterSplits 2, 4 or 8: a build for launches in clusters
// of that many splits, which combine through distributed shared memory, with the split count and
// p.cluster folded in and the other epilogues gone (B=64 h=32: 47.60 -> 47.01 us with the cluster
// folded in, then 46.83 -> 46.42 with the split count). kClusterSplits 0: the build for other
// launches, p.cluster a run-time flag: built without the cluster path, those shapes ran 0.2-1.5 us
// slower, so the general build keeps it.
template <int kPks, int kClusterSplits>
__global__ void __launch_bounds__(kThreads, 1) decode_wgmma_impl(const KernelParams p) {
  const bool clustered = kClusterSplits > 0 || p.cluster;
  Probe probe;
  extern __shared__ __align__(128) std::uint8_t smem[];
  // f16 V tile: core matrix (block db of 8 positions, token block tb of 8) at (db * 8 + tb) * 128,
  // token row (t % 8) * 16: M-major A of O^T (M = positions, each 16 of them 8 even dims, then 8 odd).
  std::uint8_t* kv_s = smem;
  std::uint8_t* qn_s = kv_s + kKvBytes;                     // Q * c_h, f16: (db * 4 + head block) * 128, K-major
  std::uint8_t* qr_s = qn_s + kQnBytes;                     // Q RoPE * c_h, bf16: (rope block * 4 + head block) * 128
  std::uint8_t* p_s = qr_s + kQrBytes;                      // P, f16: (token block * 4 + head block) * 128, K-major
  float* xchg_s = reinterpret_cast<float*>(p_s + kPBytes);  // [2 wg][2][128][4] S^T partials
  std::uint8_t* ring = reinterpret_cast<std::uint8_t*>(xchg_s + 2 * 8 * 128);  // stages x [64 tokens][656 B]
  float* red_s = reinterpret_cast<float*>(ring + p.stages * kStageBytes);      // [2][4 warps][16 heads]
  float* alpha_s = red_s + 2 * 4 * 16;                                         // [32]
  float* m_s = alpha_s + kHeads;                                               // [32]
  float* l_s = m_s + kHeads;                                                   // [32]
  float* qinv_s = l_s + kHeads;                                                // [32] 1 / c_h
  std::uint64_t* full_s = reinterpret_cast<std::uint64_t*>(qinv_s + kHeads);   // [2] ring slots landed
  int* flag_s = reinterpret_cast<int*>(full_s + 2);         // [2] by tile parity: some column's maximum moved
  float* peer_ml_s = reinterpret_cast<float*>(flag_s + 2);  // [8 ranks][m, l][32 heads]: the cluster's m and l
  std::int32_t* idx_s = reinterpret_cast<std::int32_t*>(peer_ml_s + 8 * 2 * kHeads);

  const Thread th = this_thread();
  const int tid = th.tid, wg = th.wg;
  const CtaWork work = cta_work(p);
  // Distributed shared memory may be written only once its CTA has started: every thread arrives
  // here and waits (long after) before the first remote store (the m and l pushed at the end).
  if (clustered) cluster_arrive_relaxed();
  const int stages = p.stages, n_tiles = work.n_tiles;

  // Prologue: the math warps' Q rows and the indices; the producers' ring barriers.
  uint4 qc[4][3];
  if (wg < 2) {
    load_q_rows(p, work, th, qc);
    store_indices(p, idx_s, work, tid);
  } else {
    init_ring(full_s, stages, tid);
  }
  probe.stamp(0, tid);  // the indices stored (their loads returned)
  probe.stamp(1, tid);  // (no block-wide barrier here: the same as stamp 0)
  if (wg == 2) {
    producer<kPks>(p, ring, idx_s, full_s, kv_s, work, th, clustered, probe);
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kMathRegs<kPks>));
  probe.stamp(10, tid);
  float cs_row[4];
  q_row_scales(qc, qinv_s, th, cs_row, probe);
  store_q(qc, cs_row, qn_s, qr_s, th);
  probe.stamp(11, tid);  // Q converted
  // O^T accumulators of this warpgroup: m-block mb holds positions 256 wg + 64 mb + 16 wl + g
  // (+8), heads 8 j + 2 t4 (+1) at [mb][4 j + {0, 1} (+2 for +8)]. Softmax state of this thread's
  // 4 S^T columns (heads 16 wg + 8 j + 2 t4 + e, index 2 j + e): the running maximum (the same in
  // every thread of the column) and this thread's share of l.
  float oacc[4][16], m_run[4], l_part[4], qinv[4];
  zero_state(oacc, m_run, l_part);
  if (tid == 0) flag_s[0] = flag_s[1] = 0;
  named_sync(kBarMath, kMathThreads);
  probe.stamp(12, tid);
#pragma unroll
  for (int c = 0; c < 4; ++c) qinv[c] = qinv_s[16 * wg + 8 * (c >> 1) + 2 * th.t4 + (c & 1)] * p.scale_log2;

  const Operands op = operands(kv_s, qn_s, qr_s, p_s, th);

  // The tile loop: one serial chain per tile in the math warps.
  named_sync(kBarInit, kThreads);  // the ring's mbarriers are initialised
  int slot = 0;
  std::uint32_t parity = 0;  // of the slots' mbarrier phases, flipped at each pass over the ring
  probe.lap(7);              // prologue
  probe.stamp(2, tid);
  for (int it = 0; it < n_tiles; ++it) {
    mbar_wait(&full_s[slot], parity);  // tile it has landed
    probe.lap(0);
    const std::uint8_t* stage = ring + slot * kStageBytes;
    std::uint32_t a[16][4], ra[2][4];
    load_k(stage, th, op.t0, a, ra);
    // The slot goes back to the producer (which waits only for tiles it still has to load; with
    // the producer conversion it refills a slot once it has converted it).
    if (kPks == 0 && it + stages < n_tiles) named_arrive(kBarEmpty + slot, kRingThreads);
    slot = slot + 1 == stages ? 0 : slot + 1;
    parity ^= slot == 0 ? 1u : 0u;
    probe.lap(1);
    float sfull[16], sacc[8];
    issue_scores(a, ra, op.q_desc, op.qr_desc, sfull);
    wgmma_wait_all();  // this S^T and the previous tile's O^T
    probe.lap(2);
    store_v_and_swap<kPks>(a, sfull, op.kv_m, xchg_s, flag_s, th, it, sacc);
    probe.lap(3);
    const bool rescale_any =
        softmax<kPks>(sacc, qinv, idx_s + it * kTile, m_run, l_part, red_s, alpha_s, flag_s, op.p_m, th, it, probe);
    probe.lap(5);
    issue_output(alpha_s, rescale_any, op.v_desc, op.p_desc, th.t4, oacc);
    probe.lap(6);
  }
  probe.stamp(3, tid);  // the loop issued its last O^T
  wgmma_wait_all();     // the last tile's O^T
  probe.stamp(4, tid);
  probe.store_phases(wg, tid, n_tiles);

  // Epilogue: l and m per head, then the splits' combine in the cluster, or the output.
  reduce_l<kClusterSplits>(p, work, l_part, m_run, red_s, m_s, l_s, peer_ml_s, th, clustered);
  probe.stamp(5, tid);  // l reduced
  if (clustered) {
    cluster_combine<kClusterSplits>(p, work, oacc, kv_s, p_s, peer_ml_s, th, probe);
    probe.cta_span(tid);
    return;
  }
  store_output(p, work, oacc, l_s, th);
  if (p.splits > 1)
    combine_if_last(p, work.b, work.head0, reinterpret_cast<float*>(kv_s), reinterpret_cast<int*>(l_s), tid);
  probe.cta_span(tid);
}

}  // namespace

int wgmma_producer_ksteps() { return kProducerKs; }

namespace {
template <int kClusterSplits>
const void* wgmma_build(int stages) {
  return stages == 1 ? reinterpret_cast<const void*>(&decode_wgmma_impl<0, kClusterSplits>)
                     : reinterpret_cast<const void*>(&decode_wgmma_impl<kProducerKs, kClusterSplits>);
}
}  // namespace

const void* decode_kernel_wgmma(int stages, int cluster) {
  switch (cluster) {
    case 2: return wgmma_build<2>(stages);
    case 4: return wgmma_build<4>(stages);
    case 8: return wgmma_build<8>(stages);
    default: return wgmma_build<0>(stages);
  }
}

#ifdef ABTRACK_WGMMA_PHASES
void print_wgmma_phases() {
  long long ph[2][9] = {};
  if (cudaMemcpyFromSymbol(ph, g_wgmma_phases, sizeof ph) != cudaSuccess) return;
  for (int wg = 0; wg < 2; ++wg)
    std::fprintf(
        stderr,
        "wgmma phases (cycles, %lld tiles, warpgroup %d): prologue %lld | data wait %lld  load+convert+S^T issue "
        "%lld  wgmma wait %lld  store+xchg %lld  softmax %lld  B3 %lld  O^T issue %lld\n",
        ph[wg][8], wg, ph[wg][7], ph[wg][0], ph[wg][1], ph[wg][2], ph[wg][3], ph[wg][4], ph[wg][5], ph[wg][6]);
  long long st[kStamps] = {};
  if (cudaMemcpyFromSymbol(st, g_stamps, sizeof st) == cudaSuccess)
    std::fprintf(
        stderr,
        "wgmma stamps (cycles from the start, CTA 0 thread 0): indices stored %lld, synced %lld, registers %lld, "
        "Q converted %lld, math synced %lld, loop %lld | "
        "last O^T issued %lld, waited %lld, l reduced %lld | staged %lld, cluster synced %lld, combined and "
        "stored %lld, synced %lld (weights %lld, others' blocks added %lld; first Q row's maximum %lld; first tile landed %lld)\n",
        st[0], st[1], st[10], st[11], st[12], st[2], st[3], st[4], st[5], st[6], st[7], st[8], st[9], st[13], st[14],
        st[15], st[16]);
  // The launch's CTAs on one clock: when they started and ended after the first one started, and
  // how long each ran (its SM's cycles), as min / median / max.
  unsigned count = 0;
  static unsigned long long span[kSpanCtas][3];
  if (cudaMemcpyFromSymbol(&count, g_cta_count, sizeof count) != cudaSuccess || count == 0 ||
      cudaMemcpyFromSymbol(span, g_cta_span, sizeof span) != cudaSuccess)
    return;
  unsigned long long t0 = ~0ull;
  for (unsigned i = 0; i < count; ++i) t0 = std::min(t0, span[i][0]);
  std::vector<double> start(count), end(count), cycles(count);
  for (unsigned i = 0; i < count; ++i) {
    start[i] = (span[i][0] - t0) * 1e-3;
    end[i] = (span[i][1] - t0) * 1e-3;
    cycles[i] = static_cast<double>(span[i][2]);
  }
  auto mmm = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return std::array<double, 3>{v.front(), v[v.size() / 2], v.back()};
  };
  const auto s3 = mmm(start), e3 = mmm(end), c3 = mmm(cycles);
  std::fprintf(stderr,
               "wgmma CTAs (%u): start %.2f / %.2f / %.2f us, end %.2f / %.2f / %.2f us after the first start; "
               "length %.0f / %.0f / %.0f cycles (min / median / max)\n",
               count, s3[0], s3[1], s3[2], e3[0], e3[1], e3[2], c3[0], c3[1], c3[2]);
}
#endif

}  // namespace abtrack::kernels::mla_decode
