#include "runner/watch.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::runner {
namespace {

using Clock = std::chrono::steady_clock;

// NVML's clock-event reason bits that are throttling, in the order names are listed.
constexpr std::array<std::pair<std::uint64_t, const char*>, 6> kThrottle = {{{0x4, "sw_power_cap"},
                                                                             {0x8, "hw_slowdown"},
                                                                             {0x10, "sync_boost"},
                                                                             {0x20, "sw_thermal_slowdown"},
                                                                             {0x40, "hw_thermal_slowdown"},
                                                                             {0x80, "hw_power_brake_slowdown"}}};
// Idle, applications clocks setting, display clock setting: the clocks are where they were asked
// to be, or the GPU has nothing to do.
constexpr std::uint64_t kNotThrottling = 0x1 | 0x2 | 0x100;

// A sample's quantities in a fixed order, so that summarise walks them alike.
constexpr std::size_t kQuantities = 7;
std::array<const std::optional<float>*, kQuantities> quantities(const GpuSample& s) {
  return {&s.sm_clock_mhz,  &s.mem_clock_mhz, &s.power_w,     &s.power_limit_w,
          &s.temperature_c, &s.gpu_util_pct,  &s.mem_util_pct};
}
std::array<std::optional<Range>*, kQuantities> ranges(GpuWatch& g) {
  return {&g.sm_clock_mhz,  &g.mem_clock_mhz, &g.power_w,     &g.power_limit_w,
          &g.temperature_c, &g.gpu_util_pct,  &g.mem_util_pct};
}

// The rank of a throttle name in throttle_names' order (hex names last, by value).
std::pair<std::size_t, std::uint64_t> rank(const std::string& name) {
  for (std::size_t i = 0; i < kThrottle.size(); ++i)
    if (name == kThrottle[i].second) return {i, 0};
  return {kThrottle.size(), name.starts_with("0x") ? std::strtoull(name.c_str() + 2, nullptr, 16) : ~0ull};
}

// Exact counts, bounds and reasons over every sample, and the samples the medians are taken
// from: every one up to kKept, then every 2nd, 4th, ... (halved in place as it fills), so an
// invocation of hours holds a few megabytes, not hundreds.
class SampleLog {
 public:
  static constexpr std::size_t kKept = 1 << 16;
  void add(const GpuSample& s) {
    ++m_samples;
    if (s.busy()) {
      ++m_busy;
      if (s.reasons) m_reasons |= *s.reasons;
    }
    auto q = quantities(s);
    for (std::size_t i = 0; i < kQuantities; ++i) {
      if (!*q[i]) continue;
      float v = **q[i];
      m_min[i] = m_min[i] ? std::min(*m_min[i], v) : v;
      m_max[i] = m_max[i] ? std::max(*m_max[i], v) : v;
    }
    if (m_seen++ % m_every != 0) return;
    if (m_kept.size() == kKept) {
      std::size_t w = 0;
      for (std::size_t r = 0; r < m_kept.size(); r += 2) m_kept[w++] = m_kept[r];
      m_kept.resize(w);
      m_every *= 2;
      if ((m_seen - 1) % m_every != 0) return;
    }
    m_kept.push_back(s);
  }
  GpuWatch summary(const NvmlDevice& device) const {
    GpuWatch g;
    g.index = device.index;
    g.uuid = device.uuid;
    g.samples = m_samples;
    g.busy = m_busy;
    auto r = ranges(g);
    std::vector<double> values;
    for (std::size_t i = 0; i < kQuantities; ++i) {
      if (!m_min[i]) continue;
      values.clear();
      for (const auto& s : m_kept)
        if (auto v = *quantities(s)[i]) values.push_back(*v);
      if (values.empty()) continue;
      *r[i] = Range{*m_min[i], stats::median(values), *m_max[i]};
    }
    auto busy_median = [&](std::optional<float> GpuSample::*field) -> std::optional<double> {
      values.clear();
      for (const auto& s : m_kept)
        if (s.busy() && s.*field) values.push_back(*(s.*field));
      return values.empty() ? std::nullopt : std::optional<double>(stats::median(values));
    };
    g.busy_sm_clock_mhz = busy_median(&GpuSample::sm_clock_mhz);
    g.busy_mem_clock_mhz = busy_median(&GpuSample::mem_clock_mhz);
    g.busy_power_w = busy_median(&GpuSample::power_w);
    g.busy_gpu_util_pct = busy_median(&GpuSample::gpu_util_pct);
    g.throttle = throttle_names(m_reasons);
    return g;
  }

 private:
  int m_samples = 0, m_busy = 0;
  std::uint64_t m_reasons = 0;
  std::array<std::optional<float>, kQuantities> m_min{}, m_max{};
  std::vector<GpuSample> m_kept;
  std::size_t m_every = 1, m_seen = 0;
};

}  // namespace

std::vector<std::string> throttle_names(std::uint64_t reasons) {
  std::vector<std::string> out;
  for (const auto& [bit, name] : kThrottle)
    if (reasons & bit) out.emplace_back(name);
  std::uint64_t known = kNotThrottling;
  for (const auto& [bit, name] : kThrottle) known |= bit;
  for (int b = 0; b < 64; ++b)
    if (std::uint64_t bit = std::uint64_t{1} << b; (reasons & bit) && !(known & bit))
      out.push_back(fmt::format("{:#x}", bit));
  return out;
}

std::vector<std::string> merge_throttle(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out = a;
  for (const auto& n : b)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string& x, const std::string& y) { return rank(x) < rank(y); });
  return out;
}

GpuWatch summarise(const NvmlDevice& device, const std::vector<GpuSample>& samples) {
  SampleLog log;
  for (const auto& s : samples) log.add(s);
  return log.summary(device);
}

std::vector<std::size_t> visible_devices(const std::vector<NvmlDevice>& devices,
                                         const std::optional<std::string>& visible) {
  std::vector<std::size_t> out;
  if (!visible) {
    for (std::size_t i = 0; i < devices.size(); ++i) out.push_back(i);
    return out;
  }
  for (const auto& raw : util::split(*visible, ',')) {
    std::string_view entry = util::trim(raw);
    std::optional<std::size_t> found;
    if (!entry.empty() &&
        std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      unsigned long n = std::strtoul(std::string(entry).c_str(), nullptr, 10);
      for (std::size_t i = 0; i < devices.size(); ++i)
        if (devices[i].index == n) found = i;
    } else if (entry.starts_with("GPU-")) {
      for (std::size_t i = 0; i < devices.size(); ++i) {
        if (!devices[i].uuid.starts_with(entry)) continue;
        if (found) {  // not unique: CUDA takes it for no device
          found.reset();
          break;
        }
        found = i;
      }
    }
    if (!found) break;
    if (std::find(out.begin(), out.end(), *found) == out.end()) out.push_back(*found);
  }
  return out;
}

Watcher::Watcher(std::optional<std::string> visible, const Nvml* library, std::chrono::milliseconds interval)
    : m_visible(std::move(visible)), m_interval(interval) {
  const Nvml* known = library ? library : nvml_if_loaded();
  if (known && !known->ok()) {
    m_result.reason = known->error();
    return;
  }
  m_thread = std::thread([this, library] { loop(library ? *library : nvml()); });
}

Watcher::~Watcher() {
  if (m_thread.joinable()) stop();
}

Watch Watcher::stop() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop.store(true);
  }
  m_cv.notify_one();
  if (m_thread.joinable()) m_thread.join();
  return std::move(m_result);
}

bool Watcher::sample(const Nvml& nvml, nvmlDevice_t device, GpuSample& out) const {
  // Utilisation first: it says whether the rest of the sample was taken while busy. The stop flag
  // is looked at between calls, so stop() waits for at most one of them.
  auto stopped = [&] { return m_stop.load(std::memory_order_relaxed); };
  NvmlUtilization u;
  if (nvml.utilization && nvml.utilization(device, &u) == kNvmlSuccess) {
    out.gpu_util_pct = static_cast<float>(u.gpu);
    out.mem_util_pct = static_cast<float>(u.memory);
  }
  unsigned v = 0;
  if (stopped()) return false;
  if (nvml.clock && nvml.clock(device, kNvmlClockSm, &v) == kNvmlSuccess) out.sm_clock_mhz = static_cast<float>(v);
  if (stopped()) return false;
  if (nvml.clock && nvml.clock(device, kNvmlClockMem, &v) == kNvmlSuccess) out.mem_clock_mhz = static_cast<float>(v);
  if (stopped()) return false;
  if (nvml.power_usage && nvml.power_usage(device, &v) == kNvmlSuccess) out.power_w = static_cast<float>(v / 1000.0);
  if (stopped()) return false;
  if (nvml.power_limit && nvml.power_limit(device, &v) == kNvmlSuccess)
    out.power_limit_w = static_cast<float>(v / 1000.0);
  if (stopped()) return false;
  if (nvml.temperature && nvml.temperature(device, kNvmlTemperatureGpu, &v) == kNvmlSuccess)
    out.temperature_c = static_cast<float>(v);
  if (stopped()) return false;
  unsigned long long reasons = 0;
  if (nvml.clock_event_reasons && nvml.clock_event_reasons(device, &reasons) == kNvmlSuccess) out.reasons = reasons;
  else if (nvml.clock_throttle_reasons && nvml.clock_throttle_reasons(device, &reasons) == kNvmlSuccess)
    out.reasons = reasons;
  return !stopped();
}

void Watcher::loop(const Nvml& nvml) {
  if (!nvml.ok()) {
    m_result.reason = nvml.error();
    return;
  }
  m_result.nvml = true;
  m_result.interval_ms = static_cast<double>(m_interval.count());
  const auto& devices = nvml.devices();
  const auto chosen = visible_devices(devices, m_visible);
  std::vector<SampleLog> logs(chosen.size());
  auto next = Clock::now();
  while (!m_stop.load()) {
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      GpuSample s;
      if (!sample(nvml, devices[chosen[i]].handle, s)) break;
      logs[i].add(s);
    }
    // A sample that overran the interval (a slow driver call) starts the next one at once, not
    // a burst of catching up.
    next = std::max(next + m_interval, Clock::now());
    std::unique_lock<std::mutex> lock(m_mutex);
    if (m_cv.wait_until(lock, next, [&] { return m_stop.load(); })) break;
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) m_result.gpus.push_back(logs[i].summary(devices[chosen[i]]));
}

}  // namespace abtrack::runner
