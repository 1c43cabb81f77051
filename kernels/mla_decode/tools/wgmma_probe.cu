// Probe: what one wgmma costs on this GPU, per shape and operand source (diagnostic only; not
// part of the build). docs/mla-decode-kernels.md, session 5. Usage on the GPU:
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -std=c++17 -o /tmp/probe wgmma_probe.cu && /tmp/probe
// Each CTA (one per SM, all SMs) has 1 or 2 warpgroups, each issuing 16 wgmmas per round into
// `chains` accumulators in turn, then commit and wait; 64 rounds. Printed: cycles per wgmma
// (issue only, and issue + wait), medians over rounds of CTA 0's thread 0, and the SM's FMA rate.
// The operands hold arbitrary finite values: only the timing matters.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ std::uint64_t desc(const void* p, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((smem_addr(p) & 0x3ffffu) >> 4) | (static_cast<std::uint64_t>(lbo >> 4) << 16) |
         (static_cast<std::uint64_t>(sbo >> 4) << 32);
}

// The accumulator operands of m64nN (N / 2 f32 per thread): placeholders and constraints.
#define P8(a, b, c, d, e, f, g, h) "%" #a ",%" #b ",%" #c ",%" #d ",%" #e ",%" #f ",%" #g ",%" #h
#define D_16 P8(0, 1, 2, 3, 4, 5, 6, 7) "," P8(8, 9, 10, 11, 12, 13, 14, 15)
#define D_32 D_16 "," P8(16, 17, 18, 19, 20, 21, 22, 23) "," P8(24, 25, 26, 27, 28, 29, 30, 31)
#define D_64                                                                                                     \
  D_32 "," P8(32, 33, 34, 35, 36, 37, 38, 39) "," P8(40, 41, 42, 43, 44, 45, 46, 47) "," P8(48, 49, 50, 51, 52, \
                                                                                           53, 54, 55) "," P8( \
      56, 57, 58, 59, 60, 61, 62, 63)
#define D_128                                                                                                     \
  D_64 "," P8(64, 65, 66, 67, 68, 69, 70, 71) "," P8(72, 73, 74, 75, 76, 77, 78, 79) "," P8(80, 81, 82, 83, 84,  \
                                                                                           85, 86, 87) "," P8( \
      88, 89, 90, 91, 92, 93, 94, 95) "," P8(96, 97, 98, 99, 100, 101, 102, 103) "," P8(104, 105, 106, 107, 108, \
                                                                                         109, 110, 111) "," P8( \
      112, 113, 114, 115, 116, 117, 118, 119) "," P8(120, 121, 122, 123, 124, 125, 126, 127)
#define F8(o) "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define O_16 F8(0), F8(8)
#define O_32 O_16, F8(16), F8(24)
#define O_64 O_32, F8(32), F8(40), F8(48), F8(56)
#define O_128 O_64, F8(64), F8(72), F8(80), F8(88), F8(96), F8(104), F8(112), F8(120)

// One wgmma: A and B from shared memory (SS; TA 1: A transposed) or A from registers (RS).
#define WGMMA_SS(SHAPE, T, TAIL, DL, OL, NA)                                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                              \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." T "." T " {" DL "}, %" #NA ", %" NA1(NA) \
               ", p, 1, 1" TAIL ";\n}\n"                                                                \
               : OL                                                                                      \
               : "l"(a), "l"(b))
#define WGMMA_RS(SHAPE, T, TAIL, DL, OL, NA)                                                                 \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                   \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." T "." T " {" DL "}, {%" #NA ", %" NA1(NA) ", %" \
               NA2(NA) ", %" NA3(NA) "}, %" NA4(NA) ", p, 1, 1" TAIL ";\n}\n"                              \
               : OL                                                                                           \
               : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(b))
// Operand numbers after the accumulators, spelled out (the preprocessor cannot add).
#define NA1(n) NA1_##n
#define NA2(n) NA2_##n
#define NA3(n) NA3_##n
#define NA4(n) NA4_##n
#define NA1_16 "17"
#define NA2_16 "18"
#define NA3_16 "19"
#define NA4_16 "20"
#define NA1_32 "33"
#define NA2_32 "34"
#define NA3_32 "35"
#define NA4_32 "36"
#define NA1_64 "65"
#define NA1_128 "129"

enum Mode { ss, ss_ta, rs };
enum Type { f16, e4m3 };

template <int N, Type T, Mode M>
__device__ __forceinline__ void wgmma(float* d, std::uint64_t a, const std::uint32_t* ar, std::uint64_t b) {
  (void)a;
  (void)ar;
  if constexpr (T == f16 && N == 32 && M == ss) WGMMA_SS("m64n32k16", "f16", ", 0, 0", D_16, O_16, 16);
  else if constexpr (T == f16 && N == 32 && M == ss_ta) WGMMA_SS("m64n32k16", "f16", ", 1, 0", D_16, O_16, 16);
  else if constexpr (T == f16 && N == 32 && M == rs) WGMMA_RS("m64n32k16", "f16", ", 0", D_16, O_16, 16);
  else if constexpr (T == f16 && N == 64 && M == ss) WGMMA_SS("m64n64k16", "f16", ", 0, 0", D_32, O_32, 32);
  else if constexpr (T == f16 && N == 64 && M == rs) WGMMA_RS("m64n64k16", "f16", ", 0", D_32, O_32, 32);
  else if constexpr (T == f16 && N == 128 && M == ss) WGMMA_SS("m64n128k16", "f16", ", 0, 0", D_64, O_64, 64);
  else if constexpr (T == f16 && N == 256 && M == ss) WGMMA_SS("m64n256k16", "f16", ", 0, 0", D_128, O_128, 128);
  else if constexpr (T == e4m3 && N == 32 && M == ss) WGMMA_SS("m64n32k32", "e4m3", "", D_16, O_16, 16);
  else if constexpr (T == e4m3 && N == 32 && M == rs) WGMMA_RS("m64n32k32", "e4m3", "", D_16, O_16, 16);
  else if constexpr (T == e4m3 && N == 64 && M == ss) WGMMA_SS("m64n64k32", "e4m3", "", D_32, O_32, 32);
  else if constexpr (T == e4m3 && N == 64 && M == rs) WGMMA_RS("m64n64k32", "e4m3", "", D_32, O_32, 32);
  else static_assert(N < 0, "shape not probed");
}

constexpr int kSmem = 163840;  // A at wg * 32 KB + 2 KB per step, B at 96 KB + wg * 16 KB + 1 KB per step

template <int N, Type T, Mode M, int CHAINS>
__global__ void __launch_bounds__(256, 1) probe(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < kSmem / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[CHAINS][N / 2];
  for (int c = 0; c < CHAINS; ++c)
    for (int j = 0; j < N / 2; ++j) d[c][j] = 0.0f;
  std::uint32_t ar[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) ar[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) wgmma<N, T, M>(d[s % CHAINS], ad + ((s * 2048) >> 4), ar[s], bd + ((s * 1024) >> 4));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) {
      out[2 * round] = t1 - t0;
      out[2 * round + 1] = t2 - t0;
    }
  }
  float sum = 0.0f;
  for (int c = 0; c < CHAINS; ++c)
    for (int j = 0; j < N / 2; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;  // keeps the accumulators live
}

struct Variant {
  void (*kernel)(long long*);
  int n, k;
  const char* type;
  const char* mode;
  int chains;
};

}  // namespace

int main() {
  const Variant vs[] = {
      {probe<32, f16, ss, 1>, 32, 16, "f16", "ss", 1},       {probe<32, f16, ss, 4>, 32, 16, "f16", "ss", 4},
      {probe<32, f16, rs, 1>, 32, 16, "f16", "rs", 1},       {probe<32, f16, rs, 2>, 32, 16, "f16", "rs", 2},
      {probe<32, f16, ss_ta, 1>, 32, 16, "f16", "ssT", 1},   {probe<32, f16, ss_ta, 4>, 32, 16, "f16", "ssT", 4},
      {probe<64, f16, ss, 1>, 64, 16, "f16", "ss", 1},       {probe<64, f16, rs, 1>, 64, 16, "f16", "rs", 1},
      {probe<128, f16, ss, 1>, 128, 16, "f16", "ss", 1},     {probe<256, f16, ss, 1>, 256, 16, "f16", "ss", 1},
      {probe<32, e4m3, ss, 1>, 32, 32, "e4m3", "ss", 1},     {probe<32, e4m3, rs, 1>, 32, 32, "e4m3", "rs", 1},
      {probe<64, e4m3, ss, 1>, 64, 32, "e4m3", "ss", 1},     {probe<64, e4m3, rs, 1>, 64, 32, "e4m3", "rs", 1},
  };
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  long long* dev = nullptr;
  if (cudaMalloc(&dev, 128 * sizeof(long long)) != cudaSuccess) return 1;
  std::printf("shape          src  chains wgs | cycles/wgmma issue  issue+wait | FMA/clk/SM\n");
  for (const Variant& v : vs) {
    cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    for (int wgs = 1; wgs <= 2; ++wgs) {
      for (int rep = 0; rep < 2; ++rep) v.kernel<<<sms, 128 * wgs, kSmem>>>(dev);
      if (cudaDeviceSynchronize() != cudaSuccess) {
        std::printf("m64n%dk%d %s %s: failed: %s\n", v.n, v.k, v.type, v.mode, cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      long long h[128];
      cudaMemcpy(h, dev, sizeof h, cudaMemcpyDeviceToHost);
      std::vector<long long> issue, total;
      for (int r = 4; r < 64; ++r) {
        issue.push_back(h[2 * r]);
        total.push_back(h[2 * r + 1]);
      }
      std::sort(issue.begin(), issue.end());
      std::sort(total.begin(), total.end());
      const double per = total[total.size() / 2] / 16.0;
      std::printf("m64n%-3dk%-2d %-4s %-4s %6d %3d | %18.1f %11.1f | %10.0f\n", v.n, v.k, v.type, v.mode, v.chains, wgs,
                  issue[issue.size() / 2] / 16.0, per, 64.0 * v.n * v.k * wgs / per);
    }
  }
  return 0;
}
