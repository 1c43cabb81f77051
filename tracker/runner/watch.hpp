#pragma once
// The watcher: while a command runs, a thread of its own samples NVML for the GPUs the command
// sees (clocks, power, temperature, utilisation, clock-event reasons) every ~20 ms, and the
// record keeps per invocation and GPU the min/median/max of each, how many samples were busy,
// and the throttle reasons seen while busy.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runner/nvml.hpp"

namespace abtrack::runner {

inline constexpr std::chrono::milliseconds kWatchInterval{20};

// The smallest, median and largest value of a quantity over an invocation's samples.
struct Range {
  double min = 0, median = 0, max = 0;
  bool operator==(const Range&) const = default;
};

// One GPU over one invocation. A quantity NVML never gave is unset.
struct GpuWatch {
  unsigned index = 0;  // NVML's index
  std::string uuid;
  int samples = 0;  // samples taken
  int busy = 0;     // of those, samples with GPU utilisation > 0
  std::optional<Range> sm_clock_mhz, mem_clock_mhz, power_w, power_limit_w, temperature_c, gpu_util_pct, mem_util_pct;
  // The medians of the clocks, power draw and GPU utilisation over the busy samples; unset
  // without one (and the last two in records written before they were kept).
  std::optional<double> busy_sm_clock_mhz, busy_mem_clock_mhz, busy_power_w, busy_gpu_util_pct;
  // The throttle reasons seen in the busy samples (throttle_names), in throttle_names' order.
  std::vector<std::string> throttle;
};

// What the watcher saw of one invocation: the GPUs it watched, or why it watched none.
struct Watch {
  bool nvml = false;
  std::string reason;      // why not, when !nvml: "no NVIDIA driver (no /dev/nvidiactl)", ...
  double interval_ms = 0;  // the sampling interval
  std::vector<GpuWatch> gpus;
};

// One sample of one GPU; what NVML could not give is unset.
struct GpuSample {
  std::optional<float> sm_clock_mhz, mem_clock_mhz, power_w, power_limit_w, temperature_c, gpu_util_pct, mem_util_pct;
  std::optional<std::uint64_t> reasons;  // NVML's clock-event reason bits
  bool busy() const { return gpu_util_pct && *gpu_util_pct > 0; }
};

// The throttling reasons among NVML's clock-event reason bits, by name: sw_power_cap (0x4),
// hw_slowdown (0x8), sync_boost (0x10), sw_thermal_slowdown (0x20), hw_thermal_slowdown (0x40),
// hw_power_brake_slowdown (0x80), and any bit NVML may add later as its hex value ("0x200"). Idle
// (0x1), applications clocks setting (0x2) and display clock setting (0x100) are not throttling.
std::vector<std::string> throttle_names(std::uint64_t reasons);

// The union of `a` and `b` (throttle names), in throttle_names' order.
std::vector<std::string> merge_throttle(const std::vector<std::string>& a, const std::vector<std::string>& b);

// A GPU's samples as one invocation's summary. Pure.
GpuWatch summarise(const NvmlDevice& device, const std::vector<GpuSample>& samples);

// The devices (positions in `devices`) a command sees when CUDA_VISIBLE_DEVICES is `visible`:
// every device when unset; else its comma-separated entries in order, each an index or a GPU
// UUID (or a unique prefix of one, "GPU-8f3a"), read as CUDA reads them: up to the first entry
// that names no device ("" and "-1": none). MIG instances are not watched. An index is NVML's
// (PCI bus order), which is CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID.
std::vector<std::size_t> visible_devices(const std::vector<NvmlDevice>& devices,
                                         const std::optional<std::string>& visible);

// Samples the GPUs a command sees from construction until stop(), on a thread of its own. The
// thread loads NVML (nvml()) on first use, so a first invocation does not wait for it; once NVML
// is known to be missing no thread is started.
class Watcher {
 public:
  // `visible`: the command's CUDA_VISIBLE_DEVICES (nullopt: unset); `library`: the NVML to use
  // (null: the process's, nvml()). Never throws for a missing NVML.
  explicit Watcher(std::optional<std::string> visible, const Nvml* library = nullptr,
                   std::chrono::milliseconds interval = kWatchInterval);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  // Stops sampling at once (a sample in progress is dropped, not waited for past the NVML call
  // it is in), and returns what was seen. Call once.
  Watch stop();

 private:
  void loop(const Nvml& nvml);
  // Takes one sample of `device`; false when stop() came meanwhile.
  bool sample(const Nvml& nvml, nvmlDevice_t device, GpuSample& out) const;

  std::optional<std::string> m_visible;
  std::chrono::milliseconds m_interval;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::atomic<bool> m_stop{false};
  Watch m_result;
  std::thread m_thread;
};

}  // namespace abtrack::runner
