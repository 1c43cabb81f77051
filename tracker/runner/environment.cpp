#include "runner/environment.hpp"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "util/text.hpp"

namespace abtrack::runner {
namespace fs = std::filesystem;
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The value after "key:" on the first line that starts with `key`.
std::string field(const std::string& text, std::string_view key) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    if (line.starts_with(key)) {
      auto colon = line.find(':');
      if (colon != std::string_view::npos) return std::string(util::trim(line.substr(colon + 1)));
    }
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return {};
}

std::string compiler_name() {
#if defined(__clang__)
  return fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

// NVML's C API, declared here so abtrack has no link-time dependency on the driver: the
// library is opened with dlopen and every entry point looked up by name.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2, kNvmlTemperatureGpu = 0;

class Nvml {
 public:
  Nvml() {
    m_lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m_lib) return;
    init = sym<nvmlReturn_t (*)()>("nvmlInit_v2");
    count = sym<nvmlReturn_t (*)(unsigned*)>("nvmlDeviceGetCount_v2");
    handle = sym<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
    name = sym<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName");
    uuid = sym<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetUUID");
    driver = sym<nvmlReturn_t (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
    clock = sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo");
    power_limit = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetEnforcedPowerLimit");
    temperature = sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperature");
    m_ok = init && count && handle && init() == kNvmlSuccess;
  }
  // Neither nvmlShutdown nor dlclose: NVML stays initialised until the process exits, when the
  // driver releases its state. nvmlShutdown took 4.3-5.0 ms on an H200 host, a tenth of a step
  // there, for nothing a short-lived command needs.
  ~Nvml() = default;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool ok() const { return m_ok; }

  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;

 private:
  template <class F>
  F sym(const char* n) {
    return reinterpret_cast<F>(::dlsym(m_lib, n));
  }
  void* m_lib = nullptr;
  bool m_ok = false;
};

std::vector<Gpu> nvml_gpus(std::string& driver_out) {
  std::vector<Gpu> out;
  static Nvml nvml;  // once per process
  if (!nvml.ok()) return out;
  char buf[256] = {};
  std::string driver;
  if (nvml.driver && nvml.driver(buf, sizeof buf - 1) == kNvmlSuccess) driver = buf;
  driver_out = driver;
  unsigned n = 0;
  if (nvml.count(&n) != kNvmlSuccess) return out;
  for (unsigned i = 0; i < n && i < 64; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvml.handle(i, &dev) != kNvmlSuccess) continue;
    Gpu g;
    g.driver = driver;
    if (nvml.name && nvml.name(dev, buf, sizeof buf - 1) == kNvmlSuccess) g.name = buf;
    std::fill(std::begin(buf), std::end(buf), '\0');
    if (nvml.uuid && nvml.uuid(dev, buf, sizeof buf - 1) == kNvmlSuccess) g.uuid = buf;
    unsigned v = 0;
    if (nvml.clock && nvml.clock(dev, kNvmlClockSm, &v) == kNvmlSuccess) g.sm_clock_mhz = v;
    if (nvml.clock && nvml.clock(dev, kNvmlClockMem, &v) == kNvmlSuccess) g.mem_clock_mhz = v;
    if (nvml.power_limit && nvml.power_limit(dev, &v) == kNvmlSuccess) g.power_limit_w = v / 1000.0;  // mW
    if (nvml.temperature && nvml.temperature(dev, kNvmlTemperatureGpu, &v) == kNvmlSuccess) g.temperature_c = v;
    out.push_back(std::move(g));
  }
  return out;
}

std::shared_future<Environment>& probe_future() {
  static std::shared_future<Environment> f;
  return f;
}

}  // namespace

void start_environment_probe() {
  auto& f = probe_future();
  if (!f.valid()) f = std::async(std::launch::async, probe_environment).share();
}

const Environment& environment() {
  start_environment_probe();
  return probe_future().get();
}

Environment probe_environment() {
  Environment e;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) e.host = host;
  struct utsname u {};
  if (uname(&u) == 0) e.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  e.cpu = field(slurp("/proc/cpuinfo"), "model name");
  e.cpus = std::thread::hardware_concurrency();
  e.compiler = compiler_name();
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." and
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
  // the first word after "Kernel Module" that is digits and dots with a dot in it.
  std::string version = slurp("/proc/driver/nvidia/version");
  if (auto k = version.find("Kernel Module"); k != std::string::npos) {
    std::string line = version.substr(k + 13, version.find('\n', k) - (k + 13));
    for (const auto& word : util::split(line, ' ')) {
      bool ok = !word.empty() && word.find('.') != std::string::npos &&
                std::all_of(word.begin(), word.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
      if (ok) {
        e.driver = word;
        break;
      }
    }
  }
  std::string nvml_driver;
  // NVML needs NVIDIA's kernel driver: its control device (or /dev/dxg, WSL's GPU bridge). Without
  // one, looking for libnvidia-ml.so.1 along the loader's ~40 paths is all the probe would do.
  std::error_code no_gpu_ec;
  if (fs::exists("/dev/nvidiactl", no_gpu_ec) || fs::exists("/proc/driver/nvidia", no_gpu_ec) || fs::exists("/dev/dxg", no_gpu_ec))
    e.gpus = nvml_gpus(nvml_driver);
  if (!nvml_driver.empty()) e.driver = nvml_driver;  // the library's word over our parsing
  if (e.gpus.empty()) {
    // No NVML (a container without the driver's user-space library): names from /proc.
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& d : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
      std::string model = field(slurp(d.path() / "information"), "Model");
      if (!model.empty()) names.push_back(model);
    }
    std::sort(names.begin(), names.end());
    for (auto& n : names) e.gpus.push_back(Gpu{std::move(n), "", e.driver, {}, {}, {}, {}});
  }
  // Runfile and pip installs leave no version.json; the folder name (cuda-13.0) says it.
  std::error_code ec;
  auto target = fs::read_symlink("/usr/local/cuda", ec).filename().string();
  if (!ec && target.starts_with("cuda-")) e.cuda = target.substr(5);
  return e;
}

std::string machine_key(const Environment& e) {
  std::string key = e.host + "\n" + e.driver;
  for (const auto& g : e.gpus) key += "\n" + g.name;
  return key;
}

}  // namespace abtrack::runner
