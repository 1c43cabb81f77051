#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "plan/load.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

const std::string kHead = "experiment: e\ndoc: d.md\naxes: {warps: [4, 8]}\ncommand: bench --warps {warps}\nmetrics:\n";

plan::Plan parse_sources(const std::string& metrics) {
  fs::path root = fs::temp_directory_path() / "abtrack-unit-root";
  fs::create_directories(root);
  return plan::parse_plan(kHead + metrics, "abtrack.yaml", root);
}

// Every diagnostic of a plan whose metrics are `metrics` (plan lines 6 onwards).
std::vector<std::string> source_errors(const std::string& metrics) {
  try {
    parse_sources(metrics);
  } catch (const Error& e) {
    CHECK(e.code() == Exit::usage);
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(format_diagnostic(d));
    return out;
  }
  FAIL("plan was accepted: " << metrics);
  return {};
}

}  // namespace

TEST_CASE("metric sources: formats, file, name/state and scale load") {
  auto p = parse_sources(
      "  hf: {hyperfine: times, name: 'sleep', file: 'hf-{warps}.json', scale: 1e6, unit: us, better: lower}\n"
      "  gb: {gbench: real_time, name: '^BM_decode/64$'}\n"
      "  nv: {nvbench: nv/cold/time/gpu/mean, state: 'Warps=8', file: out/nvbench.json}\n"
      "  js: {json: rows.0.t, file: out.json}\n");
  REQUIRE(p.metrics.size() == 4);
  CHECK(p.metrics[0].source == plan::Source::hyperfine);
  CHECK(p.metrics[0].selector == "times");
  CHECK(p.metrics[0].filter == "sleep");
  CHECK(p.metrics[0].file == "hf-{warps}.json");
  CHECK(p.metrics[0].scale == 1e6);
  CHECK(p.metrics[1].source == plan::Source::gbench);
  CHECK(p.metrics[1].filter == "^BM_decode/64$");
  CHECK(p.metrics[1].file.empty());
  CHECK(p.metrics[1].scale == 1);
  CHECK(p.metrics[2].source == plan::Source::nvbench);
  CHECK(p.metrics[2].selector == "nv/cold/time/gpu/mean");
  CHECK(p.metrics[2].filter == "Warps=8");
  CHECK(p.metrics[3].source == plan::Source::json);
  CHECK(p.metrics[3].file == "out.json");
  CHECK(plan::to_string(plan::Source::nvbench) == "nvbench");
}

TEST_CASE("metric source mistakes are all reported with positions") {
  auto errs = source_errors(
      "  a: {hyperfine: mean, gbench: real_time}\n"           // line 6
      "  b: {hyperfine: avg}\n"                               // 7
      "  c: {gbench: real_time, name: '(['}\n"                // 8
      "  d: {nvbench: nv/cold/time/gpu/mean, state: '*x'}\n"  // 9
      "  e: {json: t, scale: 0}\n"                            // 10
      "  f: {json: t, scale: 1e400}\n"                        // 11
      "  g: {json: t, fiel: x.json}\n"                        // 12
      "  h: {gbench: cpu_time}\n"                             // 13
      "  i: {json: t, name: x}\n"                             // 14
      "  j: {hyperfine: mean, state: x}\n"                    // 15
      "  k: {better: lower}\n"                                // 16
      "  l: {regex: 'x ([0-9]+)', file: ''}\n"                // 17
      "  m: {json: t, scale: fast}\n");                       // 18
  std::vector<std::string> want = {
      "abtrack.yaml:6:24: metric 'a' has more than one source ('hyperfine' and 'gbench'); give exactly one",
      "abtrack.yaml:7:18: metric 'b': hyperfine field 'avg' is not one of mean, median, min, max, stddev, times",
      "abtrack.yaml:8:32: the name regex of metric 'c' does not compile",
      "abtrack.yaml:9:46: the state regex of metric 'd' does not compile",
      "abtrack.yaml:10:23: metric 'e': scale must be a finite non-zero number, not 0\n  hint: e.g. scale: 1e6 turns seconds into microseconds",
      "abtrack.yaml:11:23: metric 'f': scale must be a finite non-zero number, not 1e400\n  hint: e.g. scale: 1e6 turns seconds into microseconds",
      "abtrack.yaml:12:16: unknown metric key 'fiel', did you mean 'file'?",
      "abtrack.yaml:13:6: metric 'h' needs 'name', a regex selecting the benchmark rows\n  hint: e.g. {gbench: real_time, name: '^BM_decode/64$'}",
      "abtrack.yaml:14:16: metric 'i': 'name' does not apply to 'json'\n  hint: name: selects hyperfine results and gbench rows, state: nvbench states",
      "abtrack.yaml:15:24: metric 'j': 'state' does not apply to 'hyperfine' (it takes 'name')\n  hint: name: selects hyperfine results and gbench rows, state: nvbench states",
      "abtrack.yaml:16:6: metric 'k' needs one of 'json', 'regex', 'hyperfine', 'gbench', 'nvbench' or 'ncu'\n  hint: e.g. {json: median_us}, {regex: 'time: ([0-9.]+)'} or {hyperfine: mean, file: hyperfine.json}",
      "abtrack.yaml:17:34: metric 'l' has an empty file path",
      "abtrack.yaml:18:23: metrics.m.scale must be a number, not 'fast'",
  };
  REQUIRE(errs.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(errs[i].starts_with(want[i]));
}

TEST_CASE("a hyperfine field typo gets did-you-mean, a gate on a metric with a bad source adds no noise") {
  auto errs = source_errors("  t: {hyperfine: mediam, scale: -0.0}\ngates: [t < 5]\n");
  REQUIRE(errs.size() == 2);
  CHECK(
      errs[0] ==
      "abtrack.yaml:6:18: metric 't': hyperfine field 'mediam' is not one of mean, median, min, max, stddev, times, did you mean 'median'?");
  CHECK(errs[1].starts_with("abtrack.yaml:6:33: metric 't': scale must be a finite non-zero number, not -0.0"));
}
