#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "plan/load.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

const std::string kNcuHead =
    "experiment: e\ndoc: d.md\naxes: {warps: [4, 8]}\ncommand: bench --warps {warps}\nmetrics:\n";

plan::Plan parse_ncu(const std::string& rest) {
  fs::path root = fs::temp_directory_path() / "abtrack-unit-root";
  fs::create_directories(root);
  return plan::parse_plan(kNcuHead + rest, "abtrack.yaml", root);
}

std::vector<std::string> errors(const std::string& rest) {
  try {
    parse_ncu(rest);
  } catch (const Error& e) {
    CHECK(e.code() == Exit::usage);
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(format_diagnostic(d));
    return out;
  }
  FAIL("plan was accepted: " << rest);
  return {};
}

bool any_has(const std::vector<std::string>& v, const std::string& text) {
  for (const auto& s : v)
    if (s.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("ncu: a metric with kernel and launch loads; the default launch is the first") {
  auto p = parse_ncu(
      "  dram: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, kernel: 'decode_{warps}', launch: 3, better: lower}\n"
      "  regs: {ncu: launch__registers_per_thread}\n");
  REQUIRE(p.metrics.size() == 2);
  CHECK(p.metrics[0].source == plan::Source::ncu);
  CHECK(p.metrics[0].selector == "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  CHECK(p.metrics[0].kernel == "decode_{warps}");
  CHECK(p.metrics[0].launch == 3);
  CHECK(p.metrics[1].kernel.empty());
  CHECK(p.metrics[1].launch == 0);
  CHECK(plan::to_string(plan::Source::ncu) == "ncu");
  auto cell_metrics = plan::metrics_for(p, plan::Cell{{"8"}});
  CHECK(cell_metrics[0].kernel == "decode_8");
}

TEST_CASE("ncu: every run is profiled only when a counter is compared, gated or predicted") {
  const std::string time = "  t: {json: t, better: lower}\n";
  const std::string regs = "  regs: {ncu: launch__registers_per_thread}\n";
  CHECK_FALSE(plan::ncu_every_run(parse_ncu(time + regs)));
  CHECK_FALSE(plan::ncu_every_run(parse_ncu(time + regs + "gates: ['t < 5']\n")));
  CHECK_FALSE(plan::ncu_every_run(parse_ncu(time + "prediction: {metric: t, change: -10%}\n")));
  CHECK(plan::ncu_every_run(parse_ncu(time + regs + "gates: ['regs <= 128']\n")));
  CHECK(plan::ncu_every_run(parse_ncu(time + "  regs: {ncu: launch__registers_per_thread, better: lower}\n")));
  CHECK(plan::ncu_every_run(parse_ncu(time + regs + "prediction: {metric: regs, change: -10%}\n")));
  // A set's metrics count by the names it makes.
  CHECK(plan::ncu_every_run(parse_ncu(time + "  occ: {ncu: occupancy}\ngates: ['occ_regs <= 168']\n")));
}

TEST_CASE("ncu: the occupancy set becomes one metric per entry, with units") {
  auto p = parse_ncu("  t: {json: t}\n  occ: {ncu: occupancy, kernel: decode, launch: 1}\ngates: [occ_dram < 90]\n");
  REQUIRE(p.metrics.size() == 1 + plan::ncu_set("occupancy")->size());
  const auto* regs = p.metric("occ_regs");
  REQUIRE(regs);
  CHECK(regs->selector == "launch__registers_per_thread");
  CHECK(regs->kernel == "decode");
  CHECK(regs->launch == 1);
  CHECK(regs->unit == "regs/thread");
  REQUIRE(p.metric("occ_achieved"));
  CHECK(p.metric("occ_achieved")->selector == "sm__warps_active.avg.pct_of_peak_sustained_active");
  REQUIRE(p.metric("occ_stall_long_sb"));
  CHECK(p.gates.size() == 1);
  CHECK(plan::ncu_set("dram") == nullptr);
}

TEST_CASE("ncu: mistakes are plan errors at their place") {
  auto e = errors("  d: {ncu: ''}\n");
  CHECK(any_has(e, "abtrack.yaml:6:12: metric 'd' has an empty ncu metric name"));
  e = errors("  d: {ncu: 'dram__throughput,sm__x'}\n");
  CHECK(any_has(e, "is not an ncu metric name"));
  e = errors("  d: {ncu: dram_throughput}\n");
  CHECK(any_has(e, "'dram_throughput' is not an ncu metric name"));
  e = errors("  d: {ncu: dram__throughput.avg, kernel: 'dec(ode'}\n");
  CHECK(any_has(e, "abtrack.yaml:6:42: the kernel regex of metric 'd' does not compile"));
  e = errors("  d: {ncu: dram__throughput.avg, kernel: ''}\n");
  CHECK(any_has(e, "metric 'd' has an empty kernel regex"));
  e = errors("  d: {ncu: dram__throughput.avg, json: x}\n");
  CHECK(any_has(e, "metric 'd' has more than one source"));
  e = errors("  d: {ncu: dram__throughput.avg, launch: -1}\n");
  CHECK(any_has(e, "launch must be a whole number >= 0, not -1"));
  e = errors("  d: {ncu: dram__throughput.avg, launch: 1.5}\n");
  CHECK(any_has(e, "launch must be a whole number >= 0, not 1.5"));
  e = errors("  d: {json: d, kernel: decode}\n");
  CHECK(any_has(e, "metric 'd': 'kernel' does not apply to 'json'"));
  e = errors("  d: {ncu: dram__throughput.avg, file: out.csv}\n");
  CHECK(any_has(e, "metric 'd': 'file' does not apply to 'ncu'"));
  e = errors("  occ: {ncu: occupancy, better: lower}\n");
  CHECK(any_has(e, "metric 'occ': 'better' does not apply to the ncu set 'occupancy'"));
  e = errors("  occ_dram: {json: x}\n  occ: {ncu: occupancy}\n");
  CHECK(any_has(e, "metric 'occ_dram' (from ncu: occupancy) is also defined elsewhere in the plan"));
  e = errors("  d: {ncu: dram__throughput.avg}\nexecutor: slurm\n");
  CHECK(any_has(e, "metric 'd' is read with ncu, which executor: slurm does not support"));
}

TEST_CASE("artifacts: a mapping names a build log and a kernel regex") {
  auto p = parse_ncu(
      "  t: {json: t}\nartifacts:\n  - build/a.cubin\n  - {path: 'build/k-{warps}.cubin', build_log: build/ptxas.log, kernel: decode}\n");
  REQUIRE(p.artifacts.size() == 2);
  REQUIRE(p.artifact_options.size() == 2);
  CHECK(p.artifacts[1] == "build/k-{warps}.cubin");
  CHECK(p.artifact_options[0].build_log.empty());
  CHECK(p.artifact_options[1].build_log == "build/ptxas.log");
  CHECK(p.artifact_options[1].kernel == "decode");
  auto e = errors("  t: {json: t}\nartifacts:\n  - {build_log: x.log}\n");
  CHECK(any_has(e, "an artifact given as a mapping needs 'path'"));
  e = errors("  t: {json: t}\nartifacts:\n  - {path: a.cubin, log: x.log}\n");
  CHECK(any_has(e, "unknown artifact key 'log'"));
  e = errors("  t: {json: t}\nartifacts:\n  - {path: a.cubin, build_log: ../x.log}\n");
  CHECK(any_has(e, "build_log '../x.log' is outside the repository"));
  e = errors("  t: {json: t}\nartifacts:\n  - {path: a.cubin, kernel: 'a(b'}\n");
  CHECK(any_has(e, "the kernel regex of artifact 'a.cubin' does not compile"));
}
