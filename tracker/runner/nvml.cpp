#include "runner/nvml.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace abtrack::runner {
namespace fs = std::filesystem;

Nvml::Nvml(const std::string& library) {
  m_lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m_lib) {
    const char* why = ::dlerror();
    std::string text = why ? why : "";
    m_error = text.find("No such file") != std::string::npos ? library + " not found"
                                                             : fmt::format("cannot load {}: {}", library, text);
    return;
  }
  auto sym = [&]<class F>(F& f, const char* n) { f = reinterpret_cast<F>(::dlsym(m_lib, n)); };
  sym(init, "nvmlInit_v2");
  sym(count, "nvmlDeviceGetCount_v2");
  sym(handle, "nvmlDeviceGetHandleByIndex_v2");
  sym(name, "nvmlDeviceGetName");
  sym(uuid, "nvmlDeviceGetUUID");
  sym(driver_version, "nvmlSystemGetDriverVersion");
  sym(clock, "nvmlDeviceGetClockInfo");
  sym(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  sym(power_usage, "nvmlDeviceGetPowerUsage");
  sym(temperature, "nvmlDeviceGetTemperature");
  sym(utilization, "nvmlDeviceGetUtilizationRates");
  sym(clock_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  sym(clock_throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  sym(error_string, "nvmlErrorString");
  if (!init || !count || !handle) {
    m_error = fmt::format("{} lacks {}", library,
                          !init    ? "nvmlInit_v2"
                          : !count ? "nvmlDeviceGetCount_v2"
                                   : "nvmlDeviceGetHandleByIndex_v2");
    return;
  }
  if (nvmlReturn_t rc = init(); rc != kNvmlSuccess) {
    const char* text = error_string ? error_string(rc) : nullptr;
    m_error = text ? fmt::format("nvmlInit_v2 failed: {}", text) : fmt::format("nvmlInit_v2 failed: NVML error {}", rc);
    return;
  }
  m_ok = true;
}

Nvml Nvml::unavailable(std::string why) { return Nvml(Unavailable{std::move(why)}); }

void Nvml::read_devices() const {
  std::call_once(m_read_once, [&] {
    if (!m_ok) return;
    char buf[256] = {};
    if (driver_version && driver_version(buf, sizeof buf - 1) == kNvmlSuccess) m_driver = buf;
    unsigned n = 0;
    if (count(&n) != kNvmlSuccess) return;
    for (unsigned i = 0; i < n && i < 64; ++i) {
      NvmlDevice d;
      d.index = i;
      if (handle(i, &d.handle) != kNvmlSuccess) continue;
      std::fill(std::begin(buf), std::end(buf), '\0');
      if (name && name(d.handle, buf, sizeof buf - 1) == kNvmlSuccess) d.name = buf;
      std::fill(std::begin(buf), std::end(buf), '\0');
      if (uuid && uuid(d.handle, buf, sizeof buf - 1) == kNvmlSuccess) d.uuid = buf;
      m_devices.push_back(std::move(d));
    }
  });
}

const std::string& Nvml::driver() const {
  read_devices();
  return m_driver;
}

const std::vector<NvmlDevice>& Nvml::devices() const {
  read_devices();
  return m_devices;
}

namespace {
std::atomic<const Nvml*> g_loaded{nullptr};

// Guaranteed copy elision lets a function-local static hold a non-movable Nvml.
Nvml load() {
  if (const char* lib = std::getenv("ABTRACK_NVML_LIBRARY"); lib && *lib) return Nvml(lib);
  std::error_code ec;
  if (fs::exists("/dev/nvidiactl", ec) || fs::exists("/proc/driver/nvidia", ec) || fs::exists("/dev/dxg", ec))
    return Nvml("libnvidia-ml.so.1");
  return Nvml::unavailable("no NVIDIA driver (no /dev/nvidiactl)");
}
}  // namespace

const Nvml& nvml() {
  static const Nvml n = load();
  g_loaded.store(&n, std::memory_order_release);
  return n;
}

const Nvml* nvml_if_loaded() { return g_loaded.load(std::memory_order_acquire); }

}  // namespace abtrack::runner
