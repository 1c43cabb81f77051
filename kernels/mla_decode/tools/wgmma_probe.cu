// Probe: what one wgmma costs on this GPU, per shape and operand source (diagnostic only; not
// part of the build; one kernel per variant, written out). docs/mla-decode-kernels.md, session 5.
// Usage on the GPU:
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o /tmp/probe wgmma_probe.cu && /tmp/probe
// Each CTA (one per SM, all SMs) has 1 or 2 warpgroups, each issuing 16 wgmmas per round into
// `chains` accumulators in turn, then commit and wait; 64 rounds. Printed: cycles per wgmma
// (issue only, and issue + wait), medians over rounds of CTA 0's thread 0, and the SM's FMA rate.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ std::uint64_t desc(const void* p, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((smem_addr(p) & 0x3ffffu) >> 4) | (static_cast<std::uint64_t>(lbo >> 4) << 16) |
         (static_cast<std::uint64_t>(sbo >> 4) << 32);
}
__device__ __forceinline__ void mma_0(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_0(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][16];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_0(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_1(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_1(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[4][16];
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_1(d[s % 4], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_2(float* d, const std::uint32_t* a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_2(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][16];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_2(d[s % 1], a[s], bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_3(float* d, const std::uint32_t* a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_3(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[2][16];
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_3(d[s % 2], a[s], bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_4(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_4(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][16];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_4(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_5(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_5(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[4][16];
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_5(d[s % 4], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_6(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_6(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][32];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_6(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_7(float* d, const std::uint32_t* a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_7(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][32];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_7(d[s % 1], a[s], bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_8(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_8(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][64];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 64; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_8(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 64; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_9(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_9(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][128];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 128; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_9(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 128; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_10(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_10(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][16];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_10(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_11(float* d, const std::uint32_t* a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_11(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][16];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_11(d[s % 1], a[s], bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 16; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_12(float* d, std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(a), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_12(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][32];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_12(d[s % 1], aa, bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
__device__ __forceinline__ void mma_13(float* d, const std::uint32_t* a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__global__ void __launch_bounds__(256, 1) probe_13(long long* out) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  for (int j = threadIdx.x; j < 163840 / 4; j += blockDim.x) reinterpret_cast<std::uint32_t*>(smem)[j] = 0x3c003c00u;
  __syncthreads();
  float d[1][32];
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) d[c][j] = 0.0f;
  [[maybe_unused]] std::uint32_t a[16][4];
#pragma unroll
  for (int s = 0; s < 16; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = 0x3c003c00u ^ (threadIdx.x & 1);
  const int wg = threadIdx.x / 128;
  const std::uint64_t ad = desc(smem + wg * 32768, 128, 256), bd = desc(smem + 98304 + wg * 16384, 128, 256);
  for (int round = 0; round < 64; ++round) {
    __syncthreads();
    const long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const std::uint64_t aa = ad + ((s * 2048) >> 4), bb = bd + ((s * 1024) >> 4);
      (void)aa;
      mma_13(d[s % 1], a[s], bb);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    const long long t1 = clock64();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) { out[2 * round] = t1 - t0; out[2 * round + 1] = t2 - t0; }
  }
  float sum = 0.0f;
  for (int c = 0; c < 1; ++c)
    for (int j = 0; j < 32; ++j) sum += d[c][j];
  if (sum == 1234.5f) out[0] = -1;
}
struct V { void (*k)(long long*); int n, kk; const char* t; const char* mode; int chains; };
int main() {
  const V vs[] = {
    {probe_0, 32, 16, "f16", "ss", 1},
    {probe_1, 32, 16, "f16", "ss", 4},
    {probe_2, 32, 16, "f16", "rs", 1},
    {probe_3, 32, 16, "f16", "rs", 2},
    {probe_4, 32, 16, "f16", "ssT", 1},
    {probe_5, 32, 16, "f16", "ssT", 4},
    {probe_6, 64, 16, "f16", "ss", 1},
    {probe_7, 64, 16, "f16", "rs", 1},
    {probe_8, 128, 16, "f16", "ss", 1},
    {probe_9, 256, 16, "f16", "ss", 1},
    {probe_10, 32, 32, "e4m3", "ss", 1},
    {probe_11, 32, 32, "e4m3", "rs", 1},
    {probe_12, 64, 32, "e4m3", "ss", 1},
    {probe_13, 64, 32, "e4m3", "rs", 1},
  };
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  long long* dev = nullptr;
  cudaMalloc(&dev, 128 * sizeof(long long));
  std::printf("shape          src  chains wgs | cycles/wgmma issue  issue+wait | FMA/clk/SM\n");
  for (const V& v : vs) {
    cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, 163840);
    for (int wgs = 1; wgs <= 2; ++wgs) {
      for (int rep = 0; rep < 2; ++rep) v.k<<<sms, 128 * wgs, 163840>>>(dev);
      if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("m64n%dk%d %s %s: failed: %s\n", v.n, v.kk, v.t, v.mode, cudaGetErrorString(cudaGetLastError())); return 1; }
      long long h[128];
      cudaMemcpy(h, dev, sizeof h, cudaMemcpyDeviceToHost);
      std::vector<long long> is, tot;
      for (int r = 4; r < 64; ++r) { is.push_back(h[2 * r]); tot.push_back(h[2 * r + 1]); }
      std::sort(is.begin(), is.end());
      std::sort(tot.begin(), tot.end());
      const double per = tot[tot.size() / 2] / 16.0;
      const double fma = 64.0 * v.n * v.kk * wgs / per;
      std::printf("m64n%-3dk%-2d %-4s %-4s %6d %3d | %18.1f %11.1f | %10.0f\n", v.n, v.kk, v.t, v.mode, v.chains, wgs,
                  is[is.size() / 2] / 16.0, per, fma);
    }
  }
  return 0;
}
