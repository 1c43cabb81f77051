#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "metrics/formats.hpp"
#include "plan/load.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

// Trimmed from `hyperfine --runs 3 --export-json out.json 'sleep 0.01' 'sleep 0.02'` (1.15).
const char* kHyperfine = R"({
  "results": [
    {"command": "sleep 0.01", "mean": 0.0115, "stddev": 0.0001, "median": 0.0116, "user": 0.0015,
     "system": 0.0, "min": 0.0114, "max": 0.0117, "times": [0.0114, 0.0116, 0.0117], "exit_codes": [0, 0, 0]},
    {"command": "sleep 0.02", "mean": 0.0215, "stddev": null, "median": 0.0215, "user": 0.0015,
     "system": 0.0, "min": 0.0215, "max": 0.0215, "times": [0.0215], "exit_codes": [0]}
  ]
})";

// The shape of Google Benchmark 1.7 --benchmark_format=json --benchmark_repetitions=2.
const char* kGbench = R"({
  "context": {"date": "2026-11-30T12:36:23+00:00", "num_cpus": 2, "library_build_type": "release"},
  "benchmarks": [
    {"name": "BM_sum/64", "run_name": "BM_sum/64", "run_type": "iteration", "repetitions": 2, "repetition_index": 0,
     "threads": 1, "iterations": 549462, "real_time": 22.4, "cpu_time": 22.3, "time_unit": "ns", "items": 5224.7},
    {"name": "BM_sum/64", "run_name": "BM_sum/64", "run_type": "iteration", "repetitions": 2, "repetition_index": 1,
     "threads": 1, "iterations": 549462, "real_time": 22.6, "cpu_time": 22.5, "time_unit": "ns", "items": 5201.0},
    {"name": "BM_sum/256", "run_name": "BM_sum/256", "run_type": "iteration", "repetitions": 2, "repetition_index": 0,
     "threads": 1, "iterations": 10000, "real_time": 80.0, "cpu_time": 79.0, "time_unit": "ns", "items": 3200.0},
    {"name": "BM_sum/64_mean", "run_name": "BM_sum/64", "run_type": "aggregate", "repetitions": 2, "threads": 1,
     "aggregate_name": "mean", "aggregate_unit": "time", "iterations": 2, "real_time": 22.5, "cpu_time": 22.4, "time_unit": "ns"},
    {"name": "BM_fail", "run_name": "BM_fail", "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
     "threads": 1, "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns", "error_occurred": true,
     "error_message": "out of memory"}
  ]
})";

// nvbench JSON 1.0 (json_printer.cu): summaries are a list of {tag, name, hint, description, hide,
// data: [{name, type, value}]} with numbers written as strings.
const char* kNvbench = R"({
  "meta": {"version": {"json": {"major": 1, "minor": 0, "patch": 0, "string": "1.0.0"}}},
  "devices": [{"id": 0, "name": "NVIDIA H200"}],
  "benchmarks": [{
    "name": "decode", "index": 0, "axes": [],
    "states": [
      {"name": "Device=0 Warps=4", "is_skipped": false, "summaries": [
        {"tag": "nv/cold/sample_size", "name": "Samples", "hint": "sample_size",
         "data": [{"name": "value", "type": "int64", "value": "1234"}]},
        {"tag": "nv/cold/time/gpu/mean", "name": "GPU Time", "hint": "duration",
         "data": [{"name": "value", "type": "float64", "value": "4.5e-05"}]}]},
      {"name": "Device=0 Warps=8", "is_skipped": false, "summaries": [
        {"tag": "nv/cold/time/gpu/mean", "name": "GPU Time", "hint": "duration",
         "data": [{"name": "value", "type": "float64", "value": "3.9e-05"}]}]},
      {"name": "Device=0 Warps=16", "is_skipped": true, "skip_reason": "too many warps", "summaries": []}
    ]}]
})";

nlohmann::json doc(const char* text) { return nlohmann::json::parse(text); }

plan::Metric metric(plan::Source source, std::string selector, std::string filter = {}, double scale = 1) {
  plan::Metric m;
  m.name = "t";
  m.source = source;
  m.selector = std::move(selector);
  m.filter = std::move(filter);
  m.scale = scale;
  return m;
}

}  // namespace

TEST_CASE("hyperfine: a field gives one sample per result, times one per run") {
  auto d = doc(kHyperfine);
  CHECK(metrics::from_hyperfine(d, "mean", "").samples == std::vector<double>{0.0115, 0.0215});
  CHECK(metrics::from_hyperfine(d, "times", "0\\.01$").samples == std::vector<double>{0.0114, 0.0116, 0.0117});
  CHECK(metrics::from_hyperfine(d, "median", "0\\.02").samples == std::vector<double>{0.0215});
  auto none = metrics::from_hyperfine(d, "mean", "sleep 1");
  CHECK(none.error == "no hyperfine result's command matches 'sleep 1' (commands: 'sleep 0.01', 'sleep 0.02')");
  CHECK(metrics::from_hyperfine(d, "stddev", "0\\.02").error ==
        "hyperfine result 'sleep 0.02' has no stddev (hyperfine gives none for a single run)");
  CHECK(metrics::from_hyperfine(doc(kGbench), "mean", "").error.starts_with("no 'results' list"));
}

TEST_CASE("gbench: iteration rows of the matching benchmarks, aggregates left out") {
  auto d = doc(kGbench);
  CHECK(metrics::from_gbench(d, "real_time", "^BM_sum/64$").samples == std::vector<double>{22.4, 22.6});
  CHECK(metrics::from_gbench(d, "cpu_time", "BM_sum/64").samples == std::vector<double>{22.3, 22.5});
  CHECK(metrics::from_gbench(d, "items", "BM_sum").samples == std::vector<double>{5224.7, 5201.0, 3200.0});
  CHECK(metrics::from_gbench(d, "real_time", "BM_fail").error ==
        "benchmark 'BM_fail' reported an error: out of memory");
  auto typo = metrics::from_gbench(d, "real_tme", "BM_sum/256");
  CHECK(typo.error.starts_with("benchmark 'BM_sum/256' has no field 'real_tme', did you mean 'real_time'?"));
  auto none = metrics::from_gbench(d, "real_time", "BM_nope");
  CHECK(none.error ==
        "no benchmark row matches 'BM_nope' (iteration rows: 'BM_sum/64', 'BM_sum/64', 'BM_sum/256', 'BM_fail')");
}

TEST_CASE("nvbench: the value of a tagged summary per state, numbers written as strings") {
  auto d = doc(kNvbench);
  CHECK(metrics::from_nvbench(d, "nv/cold/time/gpu/mean", "Warps=4$").samples == std::vector<double>{4.5e-05});
  CHECK(metrics::from_nvbench(d, "nv/cold/time/gpu/mean", "Warps=(4|8)$").samples ==
        std::vector<double>{4.5e-05, 3.9e-05});
  CHECK(metrics::from_nvbench(d, "nv/cold/sample_size", "Warps=4").samples == std::vector<double>{1234});
  // Skipped states are left out; only skipped ones matching is an error that says why.
  CHECK(metrics::from_nvbench(d, "nv/cold/time/gpu/mean", "").samples.size() == 2);
  CHECK(metrics::from_nvbench(d, "nv/cold/time/gpu/mean", "Warps=16").error ==
        "every state matching 'Warps=16' was skipped; state 'Device=0 Warps=16' was skipped: too many warps");
  auto tag = metrics::from_nvbench(d, "nv/cold/sample_size", "Warps=8");
  CHECK(tag.error.starts_with("state 'Device=0 Warps=8' has no summary tagged 'nv/cold/sample_size'"));
  CHECK(metrics::from_nvbench(d, "nv/cold/time/gpu/mean", "Warps=32").error ==
        "no nvbench state matches 'Warps=32' (states: 'Device=0 Warps=4', 'Device=0 Warps=8', 'Device=0 Warps=16')");
}

TEST_CASE("a tool's JSON is found after log lines, scale multiplies every sample") {
  std::string out = std::string("Benchmark 1: sleep 0.01\n  Time (mean): 11.5 ms\n") + kHyperfine + "\n";
  auto e = metrics::extract(metric(plan::Source::hyperfine, "times", "0\\.01$", 1e6), out);
  REQUIRE(e.ok());
  CHECK(e.samples == std::vector<double>{0.0114 * 1e6, 0.0116 * 1e6, 0.0117 * 1e6});
  auto huge = metrics::extract(metric(plan::Source::gbench, "real_time", "BM_sum/64$", 1e308), kGbench);
  CHECK(huge.error == "a sample times scale 1e+308 is not finite");
  CHECK(metrics::extract(metric(plan::Source::nvbench, "nv/cold/time/gpu/mean"), "no json here\n").error ==
        "no JSON object on stdout");
}

TEST_CASE("metrics read from files: placeholders, missing files, stale files") {
  fs::path dir = fs::temp_directory_path() / "abtrack-unit-metric-files";
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  auto p = plan::parse_plan(
      "experiment: e\ndoc: d.md\naxes: {warps: [4, 8]}\ncommand: x\n"
      "metrics:\n"
      "  t: {hyperfine: mean, name: '0\\.01', file: 'out/hf-{warps}.json', scale: 1000}\n"
      "  n: {json: results.0.times, file: 'out/hf-{warps}.json'}\n"
      "  s: {regex: 'lat ([0-9.]+)'}\n",
      "abtrack.yaml", dir);
  auto cells = p.cells();
  metrics::MetricFiles files{dir, &p, &cells[1]};
  CHECK(files.relative(p.metrics[0]) == "out/hf-8.json");

  auto before = metrics::stamp_files(p.metrics, files);
  auto missing = metrics::extract_all(p.metrics, "lat 3\n", &files, &before);
  CHECK(missing.at("t").error ==
        "metric 't': file 'out/hf-8.json' not found (looked for " + (dir / "out/hf-8.json").string() + ")");
  CHECK(missing.at("s").samples == std::vector<double>{3});

  std::ofstream(dir / "out/hf-8.json") << kHyperfine;
  auto got = metrics::extract_all(p.metrics, "lat 3\n", &files, &before);
  REQUIRE(got.at("t").ok());
  CHECK(got.at("t").samples == std::vector<double>{0.0115 * 1000});
  CHECK(got.at("n").samples == std::vector<double>{0.0114, 0.0116, 0.0117});

  // The file is still there for the next invocation; unchanged, it is not this invocation's result.
  auto again = metrics::stamp_files(p.metrics, files);
  auto stale = metrics::extract_all(p.metrics, "lat 3\n", &files, &again);
  CHECK(stale.at("t").error ==
        "metric 't': file 'out/hf-8.json' was not written by the command (same size and time as before it ran)");

  // Without a command run (step --record), a file metric cannot be read.
  auto no_files = metrics::extract_all(p.metrics, "lat 3\n");
  CHECK(no_files.at("t").error ==
        "metric 't': it is read from file 'out/hf-{warps}.json', which only running the command writes");
  std::ofstream(dir / "out/hf-4.json") << "not json";
  metrics::MetricFiles four{dir, &p, &cells[0]};
  auto bad = metrics::extract_all(p.metrics, "", &four);
  CHECK(bad.at("t").error == "metric 't': no JSON object in the file (in file 'out/hf-4.json')");
  fs::remove_all(dir);
}
