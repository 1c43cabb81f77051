// Runs the CUDA kernel family on the current device: uploads inputs, resolves a configuration
// into a launch plan (splits, shared memory, occupancy), launches, times, downloads.
// A plain C++ interface; only built when CUDA is enabled (ABTRACK_HAVE_CUDA).
#pragma once

#include "cuda_config.hpp"
#include "problem.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace abtrack::kernels::mla_decode {

// Whether a CUDA device is usable; when not, `why` says why (no device, driver mismatch, ...).
bool cuda_device_available(std::string& why);

// Properties of device 0 that the driver reports with every run.
struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::size_t l2_bytes = 0;
  std::size_t smem_optin = 0;  // per-block opt-in shared memory limit
  int sm_clock_mhz = 0;        // current SM clock (0 if unknown)
};
// Reads device 0. Throws std::runtime_error on a CUDA error.
DeviceInfo cuda_device_info();

// A configuration resolved for one problem: what runs, and what it costs in resources.
struct LaunchPlan {
  CudaConfig config;
  int splits = 1;  // resolved (auto -> a number)
  int tiles = 0;
  int tiles_per_split = 0;
  bool feasible = true;
  std::string why;  // when not feasible
  std::size_t smem_bytes = 0;
  int regs_per_thread = 0;
  std::size_t local_bytes = 0;  // per-thread local memory (spills)
  int ctas_per_sm = 0;
  int warps_per_sm = 0;
  int cluster = 1;  // CTAs per cluster: the splits (wgmma kernel, splits 2, 4 or 8, when
                    // clusters of that size keep as many CTAs resident), else 1
};

// Measures device-to-device copy bandwidth (bytes read + written per second) with `bytes`-sized
// cudaMemcpy between two buffers (median of `repeats`). Throws std::runtime_error.
double measure_copy_bandwidth(std::size_t bytes = std::size_t{1} << 30, int repeats = 7);

// The inputs of one problem on the device, and its output buffers.
class CudaDecoder {
 public:
  // Uploads `in`. Throws std::runtime_error on CUDA errors (e.g. out of memory).
  CudaDecoder(const Inputs& in, double softmax_scale);
  ~CudaDecoder();
  CudaDecoder(const CudaDecoder&) = delete;
  CudaDecoder& operator=(const CudaDecoder&) = delete;

  // Resolves `config` for this problem (invalid knob values -> std::invalid_argument).
  // An infeasible plan is returned with feasible = false and `why`, never launched.
  LaunchPlan plan(const CudaConfig& config);

  // Fills out, lse and the split partials with 0xff (NaN), asynchronously.
  void poison();
  // Launches the decode (and the combine when splits > 1) on the decoder's stream; checks the
  // launches. Throws std::logic_error for an infeasible plan.
  void launch(const LaunchPlan& plan);
  // Waits for the stream and returns out/lse.
  Outputs download();
  // `samples` timings in microseconds: per sample poison, an L2 flush of exactly the L2 size
  // (a memset, which leaves its lines dirty in L2; with L2Flush::clean a read of another
  // L2-sized buffer follows, so L2 holds clean lines), then events around launch(). `warmup`
  // untimed launches first.
  std::vector<double> time(const LaunchPlan& plan, int samples, int warmup, L2Flush flush = L2Flush::dirty);

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Runs the dequant self-test kernel: for each e4m3 code c (0..255), the cvt and the bit-trick
// dequant of c with `scale`, as floats: result[c] = cvt, result[256 + c] = bits.
std::vector<float> cuda_dequant_selftest(float scale);

}  // namespace abtrack::kernels::mla_decode
