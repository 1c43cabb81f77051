// The floor under a timed decode launch: an empty kernel launched as the wgmma decode kernel is
// (B=64 h=32: a grid of 2 x 1 x 64 CTAs of 384 threads, 227 KB of dynamic shared memory, clusters
// of 2), timed the way CudaDecoder::time() times it (a memset of the L2 size first, then CUDA
// events around the launch), next to launches that drop one of those properties at a time.
// Diagnostic only (not built by CMake):
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o launch_floor kernels/mla_decode/tools/launch_floor.cu
//   ./launch_floor [samples]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

// Touches its shared memory once (so the allocation is real) and writes nothing unless told to.
__global__ void empty_kernel(int* never) {
  extern __shared__ int smem[];
  if (threadIdx.x == 0) smem[0] = blockIdx.x;
  __syncthreads();
  if (never && smem[0] < 0) *never = smem[0];
}

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 50;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::size_t l2 = static_cast<std::size_t>(prop.l2CacheSize);
  void* flush = nullptr;
  CHECK(cudaMalloc(&flush, l2));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int smem_max = static_cast<int>(prop.sharedMemPerBlockOptin);
  CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
  CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  struct Case {
    const char* name;
    dim3 grid;
    int threads;
    int smem;
    int cluster;
  };
  const Case cases[] = {
      {"2x1x64 CTAs, 384 threads, 227 KB smem, clusters of 2 (the decode launch)", dim3(2, 1, 64), 384, smem_max, 2},
      {"the same without clusters", dim3(2, 1, 64), 384, smem_max, 1},
      {"the same with 16 B of dynamic shared memory", dim3(2, 1, 64), 384, 16, 1},
      {"1 CTA of 32 threads", dim3(1, 1, 1), 32, 16, 1},
      {"2x1x128 CTAs, 384 threads, 227 KB smem (two waves)", dim3(2, 1, 128), 384, smem_max, 1},
  };
  std::printf("%s, %d SMs, L2 %zu bytes, %d samples each (median, min, max in us)\n", prop.name, prop.multiProcessorCount,
              l2, samples);
  for (const Case& c : cases) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = c.grid;
    cfg.blockDim = dim3(c.threads);
    cfg.dynamicSmemBytes = static_cast<std::size_t>(c.smem);
    cfg.stream = s;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(c.cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = c.cluster > 1 ? 1 : 0;
    int* never = nullptr;
    std::vector<float> us;
    for (int i = 0; i < samples + 3; ++i) {
      CHECK(cudaMemsetAsync(flush, i & 0xff, l2, s));
      CHECK(cudaEventRecord(a, s));
      CHECK(cudaLaunchKernelEx(&cfg, empty_kernel, never));
      CHECK(cudaEventRecord(b, s));
      CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (i >= 3) us.push_back(ms * 1000.0f);
    }
    std::sort(us.begin(), us.end());
    std::printf("%7.2f %7.2f %7.2f  %s\n", us[us.size() / 2], us.front(), us.back(), c.name);
  }
  return 0;
}
