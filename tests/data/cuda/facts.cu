// Kernels whose compiled facts (registers, spills, SASS instruction classes) and profiler
// counters abtrack's tests check: tests/e2e/test_cuda_facts.sh compiles this file to a cubin
// where nvcc and cuobjdump exist, and record.sh made the recorded outputs beside it, which the
// fake cuobjdump and ncu in tests/e2e/ replay. Built with -maxrregcount=32: `crowded` spills,
// the others do not.
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

#include <cstdio>

// Shared memory, a barrier, a conversion to half and back: few registers, no spills.
__global__ void tidy(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  const float v = tile[(threadIdx.x + 1) % blockDim.x];
  if (i < n) out[i] = __half2float(__float2half(v)) + static_cast<float>(i);
}

// Sixty-four values live at once, each costly to recompute: more than 32 registers hold.
__global__ void crowded(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float x = i < n ? in[i] : 0.f;
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = __sinf(x * static_cast<float>(k + 1)) * __expf(x - k);
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 64; ++k) acc = acc * v[63 - k] + v[k];
  if (i < n) out[i] = acc;
}

// An asynchronous copy into shared memory (LDGSTS).
__global__ void staged(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  __pipeline_memcpy_async(&buf[threadIdx.x], &in[i % n], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n) out[i] = buf[blockDim.x - 1 - threadIdx.x];
}

// One 16x16x16 half-precision tile product on the tensor cores (HMMA).
__global__ void tensor(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// Launches each kernel (tidy twice) and prints one JSON line, like a bench driver.
int main() {
  const int n = 1 << 20;
  float *in = nullptr, *out = nullptr;
  half *a = nullptr, *b = nullptr;
  if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&a, 256 * sizeof(half)) != cudaSuccess || cudaMalloc(&b, 256 * sizeof(half)) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(in, 0, n * sizeof(float));
  cudaMemset(a, 0, 256 * sizeof(half));
  cudaMemset(b, 0, 256 * sizeof(half));
  tidy<<<n / 256, 256>>>(in, out, n);
  crowded<<<n / 256, 256>>>(in, out, n);
  staged<<<n / 256, 256>>>(in, out, n);
  tensor<<<1, 32>>>(a, b, out);
  tidy<<<n / 256, 256>>>(in, out, n);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("{\"ok\": 1}\n");
  return 0;
}
