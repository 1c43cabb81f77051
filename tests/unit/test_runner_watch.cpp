#include <doctest/doctest.h>

#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "record/record.hpp"
#include "runner/run.hpp"
#include "runner/watch.hpp"

using namespace abtrack;
using namespace std::chrono_literals;

namespace {
runner::GpuSample sample(float util, float sm, std::optional<std::uint64_t> reasons = std::nullopt) {
  runner::GpuSample s;
  s.gpu_util_pct = util;
  s.mem_util_pct = util / 2;
  s.sm_clock_mhz = sm;
  s.mem_clock_mhz = 2619;
  s.power_w = util > 0 ? 650.5f : 80;
  s.reasons = reasons;
  return s;
}
std::vector<runner::NvmlDevice> devices() {
  return {{0, nullptr, "H200", "GPU-aaaa1111-0000"},
          {1, nullptr, "H200", "GPU-aaaa2222-0000"},
          {2, nullptr, "H200", "GPU-bbbb3333-0000"}};
}
// The GPU's watch with clocks `sm` over its busy samples (none when `busy` is false).
runner::Invocation watched(const std::string& uuid, double sm, bool busy) {
  runner::GpuWatch g;
  g.uuid = uuid;
  g.samples = 4;
  g.busy = busy ? 3 : 0;
  g.sm_clock_mhz = runner::Range{345, busy ? sm : 345, sm};
  g.mem_clock_mhz = runner::Range{1593, 2619, 2619};
  if (busy) {
    g.busy_sm_clock_mhz = sm;
    g.busy_mem_clock_mhz = 2619;
  }
  runner::Watch w;
  w.nvml = true;
  w.gpus.push_back(g);
  runner::Invocation inv;
  inv.watch = w;
  return inv;
}
}  // namespace

TEST_CASE("watch: only power, thermal and hardware slowdowns are throttling, by name") {
  CHECK(runner::throttle_names(0x1 | 0x2 | 0x100).empty());  // idle, application clocks, display clock
  CHECK(runner::throttle_names(0x4) == std::vector<std::string>{"sw_power_cap"});
  CHECK(runner::throttle_names(0x1 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80) ==
        std::vector<std::string>{"hw_slowdown", "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                 "hw_power_brake_slowdown"});
  CHECK(runner::throttle_names(0x200 | 0x4) ==
        std::vector<std::string>{"sw_power_cap", "0x200"});  // a bit NVML may add later
  CHECK(runner::merge_throttle({"hw_slowdown", "0x200"}, {"sw_power_cap", "hw_slowdown"}) ==
        std::vector<std::string>{"sw_power_cap", "hw_slowdown", "0x200"});
}

TEST_CASE("watch: a GPU's samples become min/median/max, busy counts, and the reasons seen while busy") {
  runner::NvmlDevice dev{1, nullptr, "H200", "GPU-x"};
  // Idle at the start (with a power-cap bit that does not count: the GPU was not busy), then busy.
  std::vector<runner::GpuSample> s = {sample(0, 345, 0x1 | 0x4), sample(90, 1980, 0), sample(95, 1980, 0x4),
                                      sample(80, 1755, 0)};
  auto g = runner::summarise(dev, s);
  CHECK(g.index == 1);
  CHECK(g.uuid == "GPU-x");
  CHECK(g.samples == 4);
  CHECK(g.busy == 3);
  REQUIRE(g.sm_clock_mhz);
  CHECK(*g.sm_clock_mhz == runner::Range{345, 1867.5, 1980});
  CHECK(*g.busy_sm_clock_mhz == 1980);
  CHECK(*g.busy_mem_clock_mhz == 2619);
  CHECK(*g.busy_power_w == doctest::Approx(650.5));  // the idle sample's 80 W left out
  CHECK(*g.busy_gpu_util_pct == 90);
  CHECK(g.gpu_util_pct->max == 95);
  CHECK(g.power_w->max == doctest::Approx(650.5));
  CHECK(!g.temperature_c);  // never given
  CHECK(g.throttle == std::vector<std::string>{"sw_power_cap"});
  s[2].reasons = 0;
  CHECK(runner::summarise(dev, s).throttle.empty());  // the idle sample's power cap is not throttling
  auto idle = runner::summarise(dev, {sample(0, 345), sample(0, 345)});
  CHECK(idle.busy == 0);
  CHECK(!idle.busy_sm_clock_mhz);
  CHECK(!idle.busy_power_w);
  CHECK(!idle.busy_gpu_util_pct);
}

TEST_CASE("watch: an invocation of hours keeps exact counts and bounds in bounded memory") {
  std::vector<runner::GpuSample> s;
  for (int i = 0; i < 300000; ++i) s.push_back(sample(50, i % 3 == 0 ? 1755 : 1980));
  s[123457] = sample(50, 210);  // one outlier, never kept for the median
  auto g = runner::summarise({0, nullptr, "", ""}, s);
  CHECK(g.samples == 300000);
  CHECK(g.busy == 300000);
  CHECK(g.sm_clock_mhz->min == 210);
  CHECK(g.sm_clock_mhz->max == 1980);
  CHECK(g.sm_clock_mhz->median == 1980);
}

TEST_CASE("watch: the GPUs CUDA_VISIBLE_DEVICES names, as CUDA reads it") {
  const auto d = devices();
  using V = std::vector<std::size_t>;
  CHECK(runner::visible_devices(d, std::nullopt) == V{0, 1, 2});
  CHECK(runner::visible_devices(d, "2,0") == V{2, 0});
  CHECK(runner::visible_devices(d, " 1 ") == V{1});
  CHECK(runner::visible_devices(d, "GPU-bbbb") == V{2});  // a unique prefix of a UUID
  CHECK(runner::visible_devices(d, "GPU-aaaa").empty());  // not unique
  CHECK(runner::visible_devices(d, "1,7,0") == V{1});     // up to the first that names no device
  CHECK(runner::visible_devices(d, "").empty());
  CHECK(runner::visible_devices(d, "-1").empty());
  CHECK(runner::visible_devices(d, "MIG-1234").empty());
}

TEST_CASE("watch: the fake NVML sampled while a command would run, and stopped at once") {
  ::setenv("FAKE_NVML_GPUS", "2", 1);
  ::setenv("FAKE_NVML_THROTTLE_FROM_CALL", "3", 1);
  runner::Nvml fake(ABTRACK_FAKE_NVML);
  REQUIRE(fake.ok());
  REQUIRE(fake.devices().size() == 2);
  CHECK(fake.devices()[1].uuid == "GPU-fake0000-0000-0000-0000-000000000001");
  runner::Watcher w("1", &fake, 5ms);
  std::this_thread::sleep_for(60ms);
  auto watch = w.stop();
  CHECK(watch.nvml);
  CHECK(watch.interval_ms == 5);
  REQUIRE(watch.gpus.size() == 1);
  const auto& g = watch.gpus[0];
  CHECK(g.index == 1);
  CHECK(g.samples >= 3);
  CHECK(g.busy == g.samples);
  CHECK(*g.busy_sm_clock_mhz == 1980);
  CHECK(g.power_limit_w->median == 700);
  CHECK(g.temperature_c->max == 60);
  CHECK(g.throttle == std::vector<std::string>{"sw_power_cap"});
  ::unsetenv("FAKE_NVML_THROTTLE_FROM_CALL");

  // Stopping does not wait for the next sample.
  runner::Watcher slow(std::nullopt, &fake, 10s);
  std::this_thread::sleep_for(20ms);
  auto t0 = std::chrono::steady_clock::now();
  auto both = slow.stop();
  CHECK(std::chrono::steady_clock::now() - t0 < 100ms);
  CHECK(both.gpus.size() == 2);
  ::unsetenv("FAKE_NVML_GPUS");
}

TEST_CASE("watch: without NVML the watch says why, and nothing fails") {
  runner::Nvml missing("/nonexistent/libnvidia-ml.so.1");
  CHECK(!missing.ok());
  runner::Watcher w(std::nullopt, &missing);
  auto watch = w.stop();
  CHECK(!watch.nvml);
  CHECK(watch.reason == "/nonexistent/libnvidia-ml.so.1 not found");
  CHECK(watch.gpus.empty());
  ::setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  runner::Nvml failing(ABTRACK_FAKE_NVML);
  ::unsetenv("FAKE_NVML_INIT_FAIL");
  CHECK(!failing.ok());
  CHECK(failing.error() == "nvmlInit_v2 failed: Driver Not Loaded");
}

TEST_CASE("watch: the fingerprint's clocks come from the busy samples, and say so") {
  runner::Environment env;
  env.gpus = {runner::Gpu{"H200", "GPU-a", "580", 345u, 1593u, 700.0, 30u, ""},
              runner::Gpu{"H200", "GPU-b", "580", 345u, 1593u, 700.0, 30u, ""},
              runner::Gpu{"H200", "GPU-c", "580", 345u, 1593u, 700.0, 30u, ""}};
  std::vector<runner::Invocation> invs = {watched("GPU-a", 1980, true), watched("GPU-a", 1965, true),
                                          watched("GPU-a", 1755, true), watched("GPU-b", 1980, false)};
  runner::apply_watched_clocks(env, invs);
  CHECK(env.gpus[0].sm_clock_mhz == 1965u);  // the median over the invocations
  CHECK(env.gpus[0].mem_clock_mhz == 2619u);
  CHECK(env.gpus[0].clocks_from == "busy");
  CHECK(env.gpus[1].sm_clock_mhz == 345u);  // watched, never busy
  CHECK(env.gpus[1].clocks_from == "idle");
  CHECK(env.gpus[2].sm_clock_mhz == 345u);  // not watched: the probe's read
  CHECK(env.gpus[2].clocks_from == "probe");
}

TEST_CASE("watch: the record keeps each invocation's watch, compact, and reads it back") {
  record::Record r;
  r.experiment = "e";
  r.run = 1;
  r.data.outcome = runner::Outcome::pass;
  auto inv = watched("GPU-a", 1980, true);
  inv.watch->interval_ms = 20;
  inv.watch->gpus[0].power_w = runner::Range{80, 650.25f, 700.123f};
  inv.watch->gpus[0].throttle = {"sw_power_cap"};
  r.data.invocations.push_back(inv);
  runner::Invocation none;
  none.watch = runner::Watch{false, "no NVIDIA driver (no /dev/nvidiactl)", 0, {}};
  r.data.invocations.push_back(none);
  std::string text = record::to_json(r);
  auto j = nlohmann::json::parse(text);
  const auto& gj = j["invocations"][0]["watch"]["gpus"][0];
  CHECK(gj["sm_clock_mhz"].dump() == "[345,1980,1980]");  // whole numbers as integers
  CHECK(gj["power_w"].dump() == "[80,650.25,700.123]");   // to the milliwatt, not float noise
  CHECK(gj["throttle"].dump() == "[\"sw_power_cap\"]");
  CHECK(j["invocations"][1]["watch"].dump() == "{\"nvml\":false,\"reason\":\"no NVIDIA driver (no /dev/nvidiactl)\"}");
  auto back = record::parse_record(text, "r.json");
  REQUIRE(back.data.invocations.size() == 2);
  REQUIRE(back.data.invocations[0].watch);
  const auto& g = back.data.invocations[0].watch->gpus.at(0);
  CHECK(g.sm_clock_mhz == runner::Range{345, 1980, 1980});
  CHECK(*g.busy_sm_clock_mhz == 1980);
  CHECK(g.busy == 3);
  CHECK(back.data.throttled.or_empty() == std::vector<std::string>{"sw_power_cap"});
  CHECK(!back.data.invocations[1].watch->nvml);
  CHECK(record::to_json(back) == text);
}
