#include <doctest/doctest.h>

#include <filesystem>

#include "cli/progress.hpp"
#include "doc/export.hpp"
#include "doc/plot.hpp"
#include "doc/render.hpp"
#include "plan/load.hpp"

using namespace abtrack;

namespace {

plan::Plan plot_plan(const std::string& extra = "") {
  return plan::parse_plan(R"(experiment: occ
doc: docs/My AB.md
axes: {warps: [4, 8], batch: [16, 64, 128]}
baseline: {warps: 4}
command: bench
metrics:
  t: {json: t, better: lower, unit: us}
  err: {json: err}
)" + extra,
                          "abtrack.yaml", std::filesystem::temp_directory_path());
}

record::Record rec(const plan::Plan& p, int run, const plan::Cell& cell, std::vector<double> t) {
  record::Record r;
  r.experiment = p.experiment;
  r.run = run;
  r.cell = record::cell_values(p, cell);
  r.data.samples["t"] = std::move(t);
  r.data.samples["err"] = {0};
  r.data.outcome = runner::Outcome::pass;
  r.code.commit = std::string(40, 'a');
  r.env.host = "host-a";
  return r;
}

std::vector<record::Record> all_runs(const plan::Plan& p) {
  std::vector<record::Record> out;
  int n = 0;
  for (const auto& c : p.cells()) {
    double base = c.values[0] == "4" ? 100 : 80;
    out.push_back(rec(p, ++n, c, {base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7}));
  }
  return out;
}

}  // namespace

TEST_CASE("the plot sits beside the document and is linked relative to it") {
  auto p = plot_plan();
  CHECK(doc::plot_path(p) == "docs/My AB.svg");
  CHECK(doc::plot_link_target(p) == "My%20AB.svg");
  CHECK(doc::plot_x_axis(p) == 1);  // the last axis
  auto regions = doc::render_regions(p, all_runs(p), doc::RenderOptions{true});
  CHECK(regions["summary"].find("![occ: t by batch](My%20AB.svg)") != std::string::npos);
  CHECK(doc::render_regions(p, all_runs(p))["summary"].find("![") == std::string::npos);
}

TEST_CASE("the gnuplot script: one line per variant, CI bars from the data files, deterministic") {
  auto p = plot_plan();
  CHECK_FALSE(doc::plot_files(p, {}).has_value());  // nothing measured yet
  auto files = doc::plot_files(p, all_runs(p));
  REQUIRE(files.has_value());
  CHECK(files->script.find("set terminal svg") != std::string::npos);
  CHECK(files->script.find("set output 'plot.svg'") != std::string::npos);
  CHECK(files->script.find("with yerrorlines") != std::string::npos);
  CHECK(files->script.find("title 'warps=4'") != std::string::npos);
  CHECK(files->script.find("title 'warps=8'") != std::string::npos);
  CHECK(files->script.find("set logscale x 2") != std::string::npos);  // 16..128
  REQUIRE(files->data.size() == 2);  // one metric with better:, two variants
  CHECK(files->data[0].first == "m1_v1.dat");
  // x, median, CI low, CI high: the median of 100..107 is 103.5, its 95% CI from stats::median_ci.
  CHECK(files->data[0].second.substr(0, files->data[0].second.find('\n')) == "16\t103.5\t100\t106");  // stats::median_ci at n=8
  auto again = doc::plot_files(p, all_runs(p));
  CHECK(again->script == files->script);
  CHECK(again->data == files->data);
}

TEST_CASE("plan text reaches the script only quoted") {
  CHECK(doc::gnuplot_quote("it's") == "'it''s'");
  CHECK(doc::gnuplot_quote("a\nsystem('x')") == "'a system(''x'')'");
  auto p = plan::parse_plan(R"(experiment: q
doc: AB.md
axes: {"v": ["a'; system('touch x'); '", "b"], n: [1]}
command: bench
metrics: {t: {json: t, better: lower}}
)",
                            "abtrack.yaml", std::filesystem::temp_directory_path());
  auto r1 = rec(p, 1, p.cells()[0], {1, 2, 3});
  CHECK(doc::plot_x_axis(p) == 1);
  auto p2 = plan::parse_plan(R"(experiment: q
doc: AB.md
axes: {"v": ["a'; system('touch x'); '", "b"]}
command: bench
metrics: {t: {json: t, better: lower}}
)",
                             "abtrack.yaml", std::filesystem::temp_directory_path());
  p = p2;
  r1 = rec(p, 1, p.cells()[0], {1, 2, 3});
  auto files = doc::plot_files(p, {r1});
  REQUIRE(files.has_value());
  CHECK(files->script.find("'a''; system(''touch x''); ''' 0") != std::string::npos);  // categorical x: tic labels
  CHECK(files->script.find("system('touch") == std::string::npos);
}

TEST_CASE("the summary warns about identical artifacts of different variants and mixed machines") {
  auto p = plot_plan();
  auto runs = all_runs(p);
  for (auto& r : runs) r.artifacts = {{"build/k.cubin", std::string(64, 'c'), 10}};
  auto s = doc::render_regions(p, runs)["summary"];
  CHECK(s.find("identical artifacts: variants warps=4, warps=8") != std::string::npos);
  CHECK(s.find("different machines") == std::string::npos);
  runs[3].artifacts[0].sha256 = std::string(64, 'd');  // warps=8 batch=16 differs
  runs[4].artifacts[0].sha256 = std::string(64, 'd');
  runs[5].artifacts[0].sha256 = std::string(64, 'd');
  runs[5].env.host = "host-b";
  s = doc::render_regions(p, runs)["summary"];
  CHECK(s.find("identical artifacts") == std::string::npos);
  CHECK(s.find("warps=8 batch=128 is compared with its baseline across different machines") != std::string::npos);
}

TEST_CASE("export: per run and per cell, csv quoting, markdown escaping, json nulls") {
  auto p = plot_plan();
  auto runs = all_runs(p);
  runs[0].data.reason = "a, \"quoted\" | reason";
  auto t = doc::export_table(p, runs, false);
  CHECK(t.columns == std::vector<std::string>{"run", "warps", "batch", "outcome", "t", "err", "t delta_pct", "t verdict", "reason"});
  REQUIRE(t.rows.size() == 6);
  auto csv = doc::format_export(t, doc::ExportFormat::csv);
  CHECK(csv.rfind("run,warps,batch,outcome,t,err,t delta_pct,t verdict,reason\r\n1,4,16,pass,103.5,0,,baseline,\"a, \"\"quoted\"\" | reason\"\r\n", 0) == 0);
  CHECK(csv.find("\r\n4,8,16,pass,83.5,0,-19.") != std::string::npos);
  auto md = doc::format_export(t, doc::ExportFormat::md);
  CHECK(md.find("a, \"quoted\" \\| reason") != std::string::npos);
  auto json = doc::format_export(doc::export_table(p, runs, true), doc::ExportFormat::json);
  CHECK(json.find("\"runs\": \"1\"") != std::string::npos);
  CHECK(json.find("\"t delta_pct\": null") != std::string::npos);
  CHECK(json.find("\"t verdict\": \"better\"") != std::string::npos);
  CHECK(json.find("\"n\": 8") != std::string::npos);
  auto pending = doc::export_table(p, {runs[0]}, true);
  CHECK(std::get<std::string>(pending.rows[1][3]) == "pending");
}

TEST_CASE("progress helpers: durations, coloured outcomes") {
  CHECK(cli::format_duration(7.2) == "0:07");
  CHECK(cli::format_duration(3725) == "1:02:05");
  CHECK(cli::coloured_result("run 1 x=1: pass  t 3", runner::Outcome::pass, false) == "run 1 x=1: pass  t 3");
  CHECK(cli::coloured_result("run 1 x=1: fail  t 3", runner::Outcome::fail, true) == "run 1 x=1: \033[1;31mfail\033[0m  t 3");
}
