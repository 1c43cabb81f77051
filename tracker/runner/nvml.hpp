#pragma once
// NVML, NVIDIA's management library, opened at run time: abtrack has no link-time dependency on
// the driver. The fingerprint (environment.hpp) and the watcher (watch.hpp) read the GPUs
// through it.
#include <mutex>
#include <string>
#include <vector>

namespace abtrack::runner {

// NVML's C API, as much of it as abtrack calls (nvml.h's types, declared here).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
inline constexpr nvmlReturn_t kNvmlSuccess = 0;
inline constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2, kNvmlTemperatureGpu = 0;
struct NvmlUtilization {
  unsigned gpu = 0, memory = 0;  // percent of the last sample period busy: kernels / memory controller
};

// One GPU as NVML numbers it.
struct NvmlDevice {
  unsigned index = 0;  // NVML's index (PCI bus order)
  nvmlDevice_t handle = nullptr;
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-1a2b..."
};

// A loaded and initialised NVML, or why there is none. Entry points the library lacks are null.
// Neither nvmlShutdown nor dlclose: NVML stays initialised until the process exits, when the
// driver releases its state. nvmlShutdown took 4.3-5.0 ms on an H200 host, a tenth of a step
// there, for nothing a short-lived command needs.
class Nvml {
 public:
  // Opens `library` (a file name the loader looks for, or a path) and calls nvmlInit_v2.
  // Never throws: a failure is ok() false with error() saying why.
  explicit Nvml(const std::string& library);
  // No NVML, for `why`.
  static Nvml unavailable(std::string why);
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  Nvml(Nvml&&) = delete;

  bool ok() const { return m_ok; }
  // Why not ok(): "libnvidia-ml.so.1 not found", "nvmlInit_v2 failed: Driver Not Loaded", ...
  const std::string& error() const { return m_error; }
  // The driver's version, "" when NVML cannot say.
  const std::string& driver() const;
  // Every GPU, in NVML's order (read once, on first use; empty when !ok()).
  const std::vector<NvmlDevice>& devices() const;

  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;  // mW
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;  // mW
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, NvmlUtilization*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons (driver 535 on), else the older
  // nvmlDeviceGetCurrentClocksThrottleReasons: the same bits.
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*clock_throttle_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;

 private:
  struct Unavailable {
    std::string why;
  };
  explicit Nvml(Unavailable u) : m_error(std::move(u.why)) {}
  void* m_lib = nullptr;
  bool m_ok = false;
  std::string m_error;
  mutable std::once_flag m_read_once;
  mutable std::string m_driver;
  mutable std::vector<NvmlDevice> m_devices;
  void read_devices() const;
};

// This process's NVML, loaded and initialised on first use (thread-safe), never unloaded: the
// library ABTRACK_NVML_LIBRARY names (a testing hook: a fake NVML, tests/fake_nvml/), else
// libnvidia-ml.so.1. Without ABTRACK_NVML_LIBRARY and without NVIDIA's kernel driver (its control
// device, /proc entries, or /dev/dxg, WSL's GPU bridge) it is not looked for along the loader's
// ~40 paths: unavailable, "no NVIDIA driver".
const Nvml& nvml();
// The same when it has been loaded already (by anyone), else nullptr: never waits.
const Nvml* nvml_if_loaded();

}  // namespace abtrack::runner
