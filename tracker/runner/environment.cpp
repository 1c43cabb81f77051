#include "runner/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runner/nvml.hpp"
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

std::vector<Gpu> nvml_gpus(std::string& driver_out) {
  std::vector<Gpu> out;
  const Nvml& nvml = runner::nvml();  // once per process
  if (!nvml.ok()) return out;
  driver_out = nvml.driver();
  for (const auto& d : nvml.devices()) {
    Gpu g;
    g.driver = nvml.driver();
    g.name = d.name;
    g.uuid = d.uuid;
    unsigned v = 0;
    if (nvml.clock && nvml.clock(d.handle, kNvmlClockSm, &v) == kNvmlSuccess) g.sm_clock_mhz = v;
    if (nvml.clock && nvml.clock(d.handle, kNvmlClockMem, &v) == kNvmlSuccess) g.mem_clock_mhz = v;
    if (nvml.power_limit && nvml.power_limit(d.handle, &v) == kNvmlSuccess) g.power_limit_w = v / 1000.0;  // mW
    if (nvml.temperature && nvml.temperature(d.handle, kNvmlTemperatureGpu, &v) == kNvmlSuccess) g.temperature_c = v;
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
                std::all_of(word.begin(), word.end(),
                            [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
      if (ok) {
        e.driver = word;
        break;
      }
    }
  }
  std::string nvml_driver;
  e.gpus = nvml_gpus(nvml_driver);                   // not looked for without NVIDIA's kernel driver (nvml.hpp)
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
    for (auto& n : names) e.gpus.push_back(Gpu{std::move(n), "", e.driver, {}, {}, {}, {}, {}});
  }
  // Runfile and pip installs leave no version.json; the folder name (cuda-13.0) says it.
  std::error_code ec;
  auto target = fs::read_symlink("/usr/local/cuda", ec).filename().string();
  if (!ec && target.starts_with("cuda-")) e.cuda = target.substr(5);
  return e;
}

std::set<std::string> gpu_kinds(const std::vector<Gpu>& gpus) {
  std::set<std::string> names;
  for (const auto& g : gpus) names.insert(g.name);
  return names;
}

bool has_kinds(const std::set<std::string>& here, const std::set<std::string>& measured) {
  return here.empty() == measured.empty() && std::includes(here.begin(), here.end(), measured.begin(), measured.end());
}

std::string describe_kinds(const std::set<std::string>& kinds) {
  return kinds.empty() ? "no GPU" : fmt::format("{}", fmt::join(kinds, ", "));
}

}  // namespace abtrack::runner
