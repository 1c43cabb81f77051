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
  CHECK(doc::document_files(p.doc) == std::vector<std::string>{"docs/My AB.md", "docs/My AB.svg"});
  CHECK(doc::plot_link_target(p) == "My%20AB.svg");
  CHECK(doc::plot_x_axis(p) == 1);  // the last axis
  auto regions = doc::render_regions(p, all_runs(p), doc::RenderOptions{true});
  CHECK(regions["summary"].find("![occ: t by batch](My%20AB.svg)") != std::string::npos);
  CHECK(doc::render_regions(p, all_runs(p))["summary"].find("![") == std::string::npos);
}

// How often `needle` occurs in `hay`.
std::size_t occurrences(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

TEST_CASE("the SVG plot: one series per variant, a point with CI whiskers per x value, deterministic") {
  auto p = plot_plan();
  CHECK_FALSE(doc::plot_svg(p, {}).has_value());  // nothing measured yet
  auto svg = doc::plot_svg(p, all_runs(p));
  REQUIRE(svg.has_value());
  CHECK(svg->rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg->ends_with("</svg>\n"));
  CHECK(occurrences(*svg, "<g class=\"panel\"") == 1);  // one metric with better:
  CHECK(svg->find("data-metric=\"t\"") != std::string::npos);
  CHECK(svg->find("t (us): median with 95% CI, lower is better") != std::string::npos);
  CHECK(occurrences(*svg, "<g class=\"series\"") == 2);
  CHECK(svg->find("data-variant=\"warps=4\"") != std::string::npos);
  CHECK(svg->find("data-variant=\"warps=8\"") != std::string::npos);
  CHECK(occurrences(*svg, "<g class=\"point\"") == 6);  // 2 variants x 3 batches
  CHECK(occurrences(*svg, "<path class=\"ci\"") == 6);
  CHECK(occurrences(*svg, "<g class=\"entry\"") == 2);         // the legend
  CHECK(svg->find("batch (log scale)") != std::string::npos);  // 16..128
  // The median of 100..107 is 103.5, its 95% CI [100, 106] from stats::median_ci at n=8.
  CHECK(svg->find("data-x=\"16\" data-median=\"103.5\" data-lo=\"100\" data-hi=\"106\"") != std::string::npos);
  CHECK(doc::plot_svg(p, all_runs(p)) == svg);
  // A failed cell's latest run is not plotted.
  auto runs = all_runs(p);
  runs[5].data.outcome = runner::Outcome::fail;
  CHECK(occurrences(*doc::plot_svg(p, runs), "<g class=\"point\"") == 5);
}

TEST_CASE("plan text reaches the SVG only escaped") {
  CHECK(doc::xml_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
  CHECK(doc::xml_escape("tab\there\x01") == "tab here ");
  CHECK(doc::xml_escape("caf\xC3\xA9 \xFF \xC0\x80") ==
        "caf\xC3\xA9 \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: invalid
  auto p = plan::parse_plan(R"(experiment: q
doc: AB.md
axes: {"v": ["</text><script>x</script>", "b&c"]}
command: bench
metrics: {t: {json: t, better: higher, unit: "µs<&>"}}
)",
                            "abtrack.yaml", std::filesystem::temp_directory_path());
  auto r1 = rec(p, 1, p.cells()[0], {});
  r1.data.samples = {{"t", {1, 2, 3}}};
  auto r2 = rec(p, 2, p.cells()[1], {});
  r2.data.samples = {{"t", {2, 3, 4}}};
  auto svg = doc::plot_svg(p, {r1, r2});
  REQUIRE(svg.has_value());
  CHECK(svg->find("<script") == std::string::npos);
  CHECK(svg->find("&lt;/text&gt;&lt;script&gt;x&lt;/script&gt;") != std::string::npos);  // a categorical x tick
  CHECK(svg->find("b&amp;c") != std::string::npos);
  CHECK(svg->find("t (µs&lt;&amp;&gt;): median with 95% CI, higher is better") != std::string::npos);
  CHECK(occurrences(*svg, "<g class=\"series\"") == 1);  // one axis: one series, named after the metric
  CHECK(occurrences(*svg, "<g class=\"point\"") == 2);
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
  // Each run's own comparison, as commit_run records it.
  auto cells = record::cells_with_runs(p, runs);
  for (std::size_t i = 3; i < 6; ++i)
    runs[i].comparison = record::compare_with_baseline(p, cells[i - 3], runs[i].data.samples);
  auto t = doc::export_table(p, runs, false);
  CHECK(t.columns == std::vector<std::string>{"run", "warps", "batch", "outcome", "t", "err", "t delta_pct",
                                              "t delta_abs", "t verdict", "reason", "code"});
  REQUIRE(t.rows.size() == 6);
  auto csv = doc::format_export(t, doc::ExportFormat::csv);
  CHECK(csv.rfind("run,warps,batch,outcome,t,err,t delta_pct,t delta_abs,t verdict,reason,code\r\n"
                  "1,4,16,pass,103.5,0,,,baseline,\"a, \"\"quoted\"\" | reason\"," +
                      runs[0].code.short_name() + "\r\n",
                  0) == 0);
  CHECK(csv.find("\r\n4,8,16,pass,83.5,0,-19.") != std::string::npos);
  auto md = doc::format_export(t, doc::ExportFormat::md);
  CHECK(md.find("a, \"quoted\" \\| reason") != std::string::npos);
  auto json = doc::format_export(doc::export_table(p, runs, true), doc::ExportFormat::json);
  CHECK(json.find("\"runs\": \"1\"") != std::string::npos);
  CHECK(json.find("\"t delta_pct\": null") != std::string::npos);
  CHECK(json.find("\"t verdict\": \"better\"") != std::string::npos);
  CHECK(json.find("\"n\": 8") != std::string::npos);
  CHECK(json.find("\"warps\": 4,") != std::string::npos);  // an integer axis value is a number, as in the records
  auto pending = doc::export_table(p, {runs[0]}, true);
  CHECK(std::get<std::string>(pending.rows[1][3]) == "pending");
}

TEST_CASE("export: an axis or metric named like one of the table's columns gets its kind after its name") {
  auto p = plan::parse_plan(
      "experiment: e\ndoc: d.md\naxes: {run: [7, 8], n: [1, 2], code: [a]}\ncommand: x\n"
      "metrics: {outcome: {json: o}, run: {json: r}}\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
  CHECK(doc::export_table(p, {}, false).columns == std::vector<std::string>{"run", "run (axis)", "n", "code (axis)",
                                                                            "outcome", "outcome (metric)",
                                                                            "run (metric)", "reason", "code"});
  CHECK(doc::export_table(p, {}, true).columns == std::vector<std::string>{"run", "n (axis)", "code (axis)", "n",
                                                                           "outcome", "outcome (metric)",
                                                                           "run (metric)", "runs", "code"});
}

TEST_CASE("progress helpers: durations, coloured outcomes") {
  CHECK(cli::format_duration(7.2) == "0:07");
  CHECK(cli::format_duration(3725) == "1:02:05");
  CHECK(cli::coloured_result("run 1 x=1: pass  t 3", runner::Outcome::pass, false) == "run 1 x=1: pass  t 3");
  CHECK(cli::coloured_result("run 1 x=1: fail  t 3", runner::Outcome::fail, true) ==
        "run 1 x=1: \033[1;31mfail\033[0m  t 3");
}
