#include "cuda_runner.hpp"

#include "cuda_check.cuh"
#include "mla_decode_kernels.cuh"
#include "splits.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace abtrack::kernels::mla_decode {

namespace {

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  void allocate(std::size_t n, const char* what) {
    release();
    if (n == 0) return;
    const cudaError_t st = cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(T));
    if (st != cudaSuccess) {
      ptr = nullptr;
      cuda_check(st, (std::string("cudaMalloc(") + what + ", " + std::to_string(n * sizeof(T)) + " bytes)").c_str(),
                 __FILE__, __LINE__);
    }
    count = n;
  }
  void release() {
    if (ptr) cudaFree(ptr);  // best effort in destructors; errors surface on the next checked call
    ptr = nullptr;
    count = 0;
  }
  ~DeviceBuffer() { release(); }
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The kernel that runs `config` (validated), launched in clusters of `cluster` CTAs (the wgmma
// kernel has a build per cluster size).
const void* kernel_for(const CudaConfig& config, int cluster = 1) {
  if (config.math == Math::wgmma) return decode_kernel_wgmma(config.stages, cluster);
  return decode_kernel(config.warps, config.tile, config.math == Math::fma, config.dequant == Dequant::bits);
}

// The decode grid: (splits, head blocks, batch).
dim3 launch_grid(const LaunchPlan& lp, int heads, int batch) {
  return dim3(static_cast<unsigned>(lp.splits), static_cast<unsigned>((heads + kHeadsPerCta - 1) / kHeadsPerCta),
              static_cast<unsigned>(batch));
}

// `cfg` launches `grid` x `block` in clusters of `cluster` CTAs along x; `attr` is its attribute.
void cluster_launch_config(cudaLaunchConfig_t& cfg, cudaLaunchAttribute& attr, dim3 grid, dim3 block, std::size_t smem,
                           int cluster, cudaStream_t stream) {
  cfg = cudaLaunchConfig_t{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  attr = cudaLaunchAttribute{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
}

// Reads `n` 16-byte words through L2 (not L1), so that L2 then holds clean lines of this buffer
// only; `sink` is written only if the words XOR to a value they never do (it keeps the loads).
__global__ void l2_read_kernel(const uint4* __restrict__ p, std::size_t n, unsigned* sink) {
  unsigned x = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = x;
}

}  // namespace

bool cuda_device_available(std::string& why) {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess) {
    why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(st);
    cudaGetLastError();
    return false;
  }
  if (count == 0) {
    why = "no CUDA device";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9 || prop.minor != 0) {
    // sm_90a machine code runs on compute capability 9.0 only (H100, H200, GH200).
    why = "device 0 is not sm_90 (the kernels are built for sm_90a: H100/H200)";
    cudaGetLastError();
    return false;
  }
  return true;
}

DeviceInfo cuda_device_info() {
  DeviceInfo info;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  int l2 = 0, optin = 0, clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0) != cudaSuccess) {
    clock_khz = 0;
    cudaGetLastError();
  }
  info.l2_bytes = static_cast<std::size_t>(l2);
  info.smem_optin = static_cast<std::size_t>(optin);
  info.sm_clock_mhz = clock_khz / 1000;
  return info;
}

double measure_copy_bandwidth(std::size_t bytes, int repeats) {
  DeviceBuffer<std::uint8_t> a, b;
  a.allocate(bytes, "copy source");
  b.allocate(bytes, "copy destination");
  CUDA_CHECK(cudaMemset(a.ptr, 0x5a, bytes));
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < repeats + 2; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(cudaMemcpyAsync(b.ptr, a.ptr, bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 2) ms.push_back(t);
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return 2.0 * static_cast<double>(bytes) / (median_of(ms) * 1e-3);
}

struct CudaDecoder::Impl {
  Shape shape;
  float scale_log2 = 0.0f;
  DeviceInfo info;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer<__nv_bfloat16> q, out;
  DeviceBuffer<std::uint8_t> pool, flush, flush_clean;
  DeviceBuffer<unsigned> sink;
  DeviceBuffer<std::int32_t> indices;
  DeviceBuffer<float> lse, part_o, part_lse;
  DeviceBuffer<int> done;  // the wgmma kernel's per-(row, head block) count of finished splits
};

CudaDecoder::CudaDecoder(const Inputs& in, double softmax_scale) : m_impl(std::make_unique<Impl>()) {
  Impl& d = *m_impl;
  d.shape = in.shape;
  d.scale_log2 = static_cast<float>(softmax_scale * 1.4426950408889634);
  d.info = cuda_device_info();
  CUDA_CHECK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreate(&d.start));
  CUDA_CHECK(cudaEventCreate(&d.stop));
  d.q.allocate(in.q.size(), "q");
  d.pool.allocate(in.pool.size(), "KV pool");
  d.indices.allocate(in.indices.size(), "indices");
  const std::size_t bh = static_cast<std::size_t>(in.shape.batch) * in.shape.heads;
  d.out.allocate(bh * 512, "out");
  d.lse.allocate(bh, "lse");
  d.flush.allocate(d.info.l2_bytes, "L2 flush buffer");
  CUDA_CHECK(cudaMemcpy(d.q.ptr, in.q.data(), in.q.size() * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.pool.ptr, in.pool.data(), in.pool.size(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.indices.ptr, in.indices.data(), in.indices.size() * 4, cudaMemcpyHostToDevice));
}

CudaDecoder::~CudaDecoder() {
  if (!m_impl) return;
  if (m_impl->stream) cudaStreamSynchronize(m_impl->stream);
  if (m_impl->start) cudaEventDestroy(m_impl->start);
  if (m_impl->stop) cudaEventDestroy(m_impl->stop);
  if (m_impl->stream) cudaStreamDestroy(m_impl->stream);
}

LaunchPlan CudaDecoder::plan(const CudaConfig& config) {
  const std::string bad = validate_config(config);
  if (!bad.empty()) throw std::invalid_argument(bad);
  Impl& d = *m_impl;
  LaunchPlan lp;
  lp.config = config;
  const void* kernel = kernel_for(config);
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  lp.regs_per_thread = attr.numRegs;
  lp.local_bytes = attr.localSizeBytes;
  const int threads = cuda_threads(config);
  const int head_blocks = (d.shape.heads + kHeadsPerCta - 1) / kHeadsPerCta;
  const SplitPlan one = plan_splits(d.shape.topk, config.tile, 1);

  int splits = config.splits;
  if (splits == 0) {
    // Occupancy with the smallest index array the split could have, to size the grid.
    const Feasibility f0 = cuda_feasibility(config, 1, d.info.smem_optin);
    int ctas = 1;
    if (f0.feasible) {
      CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(f0.smem_bytes)));
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, f0.smem_bytes));
    }
    splits = auto_splits_gpu(d.shape.batch, head_blocks, one.tiles, std::max(1, ctas) * d.info.sm_count);
  }
  const SplitPlan sp = plan_splits(d.shape.topk, config.tile, splits);
  lp.splits = sp.splits;
  lp.tiles = sp.tiles;
  lp.tiles_per_split = sp.tiles_per_split;
  const Feasibility f = cuda_feasibility(config, sp.tiles_per_split, d.info.smem_optin);
  lp.smem_bytes = f.smem_bytes;
  if (!f.feasible) {
    lp.feasible = false;
    lp.why = f.why;
    return lp;
  }
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(f.smem_bytes)));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&lp.ctas_per_sm, kernel, threads, f.smem_bytes));
  lp.warps_per_sm = lp.ctas_per_sm * threads / 32;
  if (lp.ctas_per_sm == 0) {
    lp.feasible = false;
    lp.why = "no CTA fits on an SM (" + std::to_string(attr.numRegs) + " registers x " + std::to_string(threads) +
             " threads, " + std::to_string(f.smem_bytes) + " B shared memory)";
    return lp;
  }
  const bool pow2 = (lp.splits & (lp.splits - 1)) == 0;
  if (config.math == Math::wgmma && lp.splits >= 2 && lp.splits <= 8 && pow2) {
    // The splits of a row and head block as one cluster, combined through distributed shared
    // memory; only where clusters of that size keep as many CTAs resident as without them.
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr;
    cluster_launch_config(cfg, attr, launch_grid(lp, d.shape.heads, d.shape.batch),
                          dim3(static_cast<unsigned>(threads)), lp.smem_bytes, lp.splits, nullptr);
    int clusters = 0;
    const void* clustered = kernel_for(config, lp.splits);
    CUDA_CHECK(
        cudaFuncSetAttribute(clustered, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(f.smem_bytes)));
    if (cudaOccupancyMaxActiveClusters(&clusters, clustered, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();  // not launchable in clusters here: the other combine
      clusters = 0;
    }
    const long long ctas = static_cast<long long>(cfg.gridDim.x) * cfg.gridDim.y * cfg.gridDim.z;
    const long long resident = static_cast<long long>(lp.ctas_per_sm) * d.info.sm_count;
    if (static_cast<long long>(clusters) * lp.splits >= std::min(ctas, resident)) lp.cluster = lp.splits;
  }
  if (lp.splits > 1 && lp.cluster == 1) {
    const std::size_t rows = static_cast<std::size_t>(d.shape.batch) * lp.splits * d.shape.heads;
    if (d.part_o.count < rows * 512) d.part_o.allocate(rows * 512, "split partials");
    if (d.part_lse.count < rows) d.part_lse.allocate(rows, "split lse");
    const std::size_t counts = static_cast<std::size_t>(d.shape.batch) * head_blocks;
    if (config.math == Math::wgmma && d.done.count < counts) {
      d.done.allocate(counts, "split counts");
      CUDA_CHECK(cudaMemset(d.done.ptr, 0, counts * sizeof(int)));
    }
  }
  return lp;
}

void CudaDecoder::poison() {
  Impl& d = *m_impl;
  CUDA_CHECK(cudaMemsetAsync(d.out.ptr, 0xff, d.out.count * sizeof(__nv_bfloat16), d.stream));
  CUDA_CHECK(cudaMemsetAsync(d.lse.ptr, 0xff, d.lse.count * sizeof(float), d.stream));
  if (d.part_o.ptr) CUDA_CHECK(cudaMemsetAsync(d.part_o.ptr, 0xff, d.part_o.count * sizeof(float), d.stream));
  if (d.part_lse.ptr) CUDA_CHECK(cudaMemsetAsync(d.part_lse.ptr, 0xff, d.part_lse.count * sizeof(float), d.stream));
  // Not poison: the counts must start at zero (the kernel leaves them so; this repairs an aborted run).
  if (d.done.ptr) CUDA_CHECK(cudaMemsetAsync(d.done.ptr, 0, d.done.count * sizeof(int), d.stream));
}

void CudaDecoder::launch(const LaunchPlan& lp) {
  if (!lp.feasible) throw std::logic_error("launch of an infeasible plan: " + lp.why);
  Impl& d = *m_impl;
  KernelParams p{};
  p.q = d.q.ptr;
  p.pool = d.pool.ptr;
  p.indices = d.indices.ptr;
  p.out = d.out.ptr;
  p.lse = d.lse.ptr;
  p.part_o = d.part_o.ptr;
  p.part_lse = d.part_lse.ptr;
  p.done = d.done.ptr;
  p.batch = d.shape.batch;
  p.heads = d.shape.heads;
  p.topk = d.shape.topk;
  p.splits = lp.splits;
  p.tiles = lp.tiles;
  p.tiles_per_split = lp.tiles_per_split;
  p.stages = lp.config.stages;
  p.scale_log2 = d.scale_log2;
  p.cluster = lp.cluster > 1 ? 1 : 0;
  const dim3 grid = launch_grid(lp, d.shape.heads, d.shape.batch);
  const dim3 block(static_cast<unsigned>(cuda_threads(lp.config)));
  void* args[] = {&p};
  if (lp.cluster > 1) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr;
    cluster_launch_config(cfg, attr, grid, block, lp.smem_bytes, lp.cluster, d.stream);
    CUDA_CHECK(cudaLaunchKernelExC(&cfg, kernel_for(lp.config, lp.cluster), args));
  } else {
    CUDA_CHECK(cudaLaunchKernel(kernel_for(lp.config), grid, block, args, lp.smem_bytes, d.stream));
  }
  CUDA_CHECK(cudaGetLastError());
  if (lp.splits > 1 && lp.config.math != Math::wgmma) {  // the wgmma kernel combines its splits itself
    const float* po = d.part_o.ptr;
    const float* pl = d.part_lse.ptr;
    __nv_bfloat16* out = d.out.ptr;
    float* lse = d.lse.ptr;
    int heads = d.shape.heads;
    int splits = lp.splits;
    void* cargs[] = {&po, &pl, &out, &lse, &heads, &splits};
    // An ordinary launch: as a programmatic dependent launch (griddepcontrol) the mma.sync kernel
    // was 12% slower at batch 16 (kernels/mla_decode/experiments/BATCH16_AB.md).
    const dim3 grid_c(static_cast<unsigned>(d.shape.heads), static_cast<unsigned>(d.shape.batch));
    CUDA_CHECK(cudaLaunchKernel(combine_kernel(), grid_c, dim3(128), cargs, 0, d.stream));
    CUDA_CHECK(cudaGetLastError());
  }
}

#ifdef ABTRACK_WGMMA_PHASES
void print_wgmma_phases();  // mla_decode_wgmma.cu, diagnostic build only
#endif

Outputs CudaDecoder::download() {
  Impl& d = *m_impl;
  CUDA_CHECK(cudaStreamSynchronize(d.stream));
#ifdef ABTRACK_WGMMA_PHASES
  print_wgmma_phases();
#endif
  Outputs o;
  o.out.resize(d.out.count);
  o.lse.resize(d.lse.count);
  CUDA_CHECK(cudaMemcpy(o.out.data(), d.out.ptr, o.out.size() * 2, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(o.lse.data(), d.lse.ptr, o.lse.size() * 4, cudaMemcpyDeviceToHost));
  return o;
}

std::vector<double> CudaDecoder::time(const LaunchPlan& lp, int samples, int warmup, L2Flush flush) {
  Impl& d = *m_impl;
  for (int i = 0; i < warmup; ++i) {
    poison();
    launch(lp);
  }
  CUDA_CHECK(cudaStreamSynchronize(d.stream));
  std::vector<double> us;
  for (int i = 0; i < samples; ++i) {
    poison();
    CUDA_CHECK(cudaMemsetAsync(d.flush.ptr, i & 0xff, d.flush.count, d.stream));
    if (flush == L2Flush::clean) {
      // The memset leaves L2 full of dirty lines, which the timed kernel would write back to
      // DRAM as it evicts them; reading another L2-sized buffer first writes them back here.
      if (!d.flush_clean.ptr) {
        d.flush_clean.allocate(d.info.l2_bytes, "clean L2 flush buffer");
        d.sink.allocate(1, "L2 flush sink");
        CUDA_CHECK(cudaMemsetAsync(d.flush_clean.ptr, 0x5a, d.flush_clean.count, d.stream));
      }
      l2_read_kernel<<<4 * d.info.sm_count, 512, 0, d.stream>>>(reinterpret_cast<const uint4*>(d.flush_clean.ptr),
                                                                d.flush_clean.count / sizeof(uint4), d.sink.ptr);
      CUDA_CHECK(cudaGetLastError());
    }
    CUDA_CHECK(cudaEventRecord(d.start, d.stream));
    launch(lp);
    CUDA_CHECK(cudaEventRecord(d.stop, d.stream));
    CUDA_CHECK(cudaEventSynchronize(d.stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, d.start, d.stop));
    us.push_back(static_cast<double>(ms) * 1e3);
  }
  return us;
}

std::vector<float> cuda_dequant_selftest(float scale) {
  DeviceBuffer<__nv_bfloat16> buf;
  buf.allocate(512, "self-test output");
  void* args[] = {&scale, &buf.ptr};
  CUDA_CHECK(cudaLaunchKernel(dequant_selftest_kernel(), dim3(1), dim3(256), args, 0, nullptr));
  CUDA_CHECK(cudaGetLastError());
  std::vector<std::uint16_t> bits(512);
  CUDA_CHECK(cudaMemcpy(bits.data(), buf.ptr, 1024, cudaMemcpyDeviceToHost));
  std::vector<float> out(512);
  for (int i = 0; i < 512; ++i) {
    const std::uint32_t word = static_cast<std::uint32_t>(bits[i]) << 16;
    std::memcpy(&out[i], &word, 4);
  }
  return out;
}

}  // namespace abtrack::kernels::mla_decode
