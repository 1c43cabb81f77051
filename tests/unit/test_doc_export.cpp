// Exact and absolute changes in the document, every `better:` metric in the summary, the
// per-run export's recorded comparison, markdown export rounding and units, and the plot's
// tick labels, log axis and tooltips.
#include <doctest/doctest.h>

#include <filesystem>

#include "doc/export.hpp"
#include "doc/plot.hpp"
#include "doc/render.hpp"
#include "plan/load.hpp"
#include "record/compare.hpp"

using namespace abtrack;

namespace {

plan::Plan sizes_plan(const std::string& extra = "") {
  return plan::parse_plan(R"(experiment: sz
doc: AB.md
axes: {opt: [O2, O3], batch: [1, 2]}
baseline: {opt: O2}
command: bench
metrics:
  t: {json: t, better: lower, unit: us}
  bytes: {json: bytes, better: lower, unit: B}
  corrupted: {json: corrupted, better: lower}
)" + extra,
                          "abtrack.yaml", std::filesystem::temp_directory_path());
}

record::Record rec(const plan::Plan& p, int run, const plan::Cell& cell, std::vector<double> t, double bytes,
                   double corrupted) {
  record::Record r;
  r.experiment = p.experiment;
  r.run = run;
  r.cell = record::cell_values(p, cell);
  r.data.samples["t"] = std::move(t);
  r.data.samples["bytes"] = std::vector<double>(4, bytes);
  r.data.samples["corrupted"] = std::vector<double>(4, corrupted);
  r.data.outcome = runner::Outcome::pass;
  r.code.commit = std::string(40, 'a');
  return r;
}

std::vector<double> noisy(double base) {
  std::vector<double> v;
  for (int i = 0; i < 8; ++i) v.push_back(base * (1 + 0.001 * ((i * 7) % 10)));
  return v;
}

// O2 cells: 4096 bytes, 0 corrupted; O3: 3584 bytes (-12.5%), 3 corrupted.
std::vector<record::Record> sizes_runs(const plan::Plan& p) {
  std::vector<record::Record> out;
  int n = 0;
  for (const auto& c : p.cells()) {
    const bool o3 = c.values[0] == "O3";
    out.push_back(rec(p, ++n, c, noisy(o3 ? 90 : 100), o3 ? 3584 : 4096, o3 ? 3 : 0));
  }
  return out;
}

}  // namespace

TEST_CASE("results: a constant metric shows its exact change, a metric with zeros its absolute change") {
  auto p = sizes_plan();
  auto results = doc::render_regions(p, sizes_runs(p))["results"];
  CHECK(results.find("| -12.5% better (exact) |") != std::string::npos);
  CHECK(results.find("| +3 (abs) worse (exact) |") != std::string::npos);
  CHECK(results.find("(exact)*: every sample of each arm is the same value") != std::string::npos);
  CHECK(results.find("(abs)*: a sample is ≤ 0") != std::string::npos);
  // Exact changes have no p and stay out of Holm: the family is the two `t` comparisons.
  CHECK(results.find("Holm–Bonferroni-adjusted over 2 comparisons") != std::string::npos);
  // Without exact or absolute changes the footnote does not mention them.
  auto plain = plan::parse_plan(
      "experiment: e\ndoc: AB.md\naxes: {v: [a, b]}\nbaseline: {v: a}\ncommand: x\n"
      "metrics: {t: {json: t, better: lower}}\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
  std::vector<record::Record> runs;
  for (const auto& c : plain.cells()) {
    record::Record r;
    r.experiment = "e";
    r.run = static_cast<int>(runs.size()) + 1;
    r.cell = record::cell_values(plain, c);
    r.data.samples["t"] = noisy(c.values[0] == "a" ? 100 : 90);
    r.data.outcome = runner::Outcome::pass;
    r.code.commit = std::string(40, 'a');
    runs.push_back(r);
  }
  auto text = doc::render_regions(plain, runs)["results"];
  CHECK(text.find("(exact)") == std::string::npos);
  CHECK(text.find("(abs)") == std::string::npos);
}

TEST_CASE("summary: one table per metric with better:") {
  auto p = sizes_plan();
  auto s = doc::render_regions(p, sizes_runs(p))["summary"];
  CHECK(s.find("| variant | Δ `t` vs baseline (geometric mean) | verdicts |") != std::string::npos);
  CHECK(s.find("| variant | Δ `bytes` vs baseline (geometric mean) | verdicts |") != std::string::npos);
  CHECK(s.find("| variant | Δ `corrupted` vs baseline (geometric mean) | verdicts |") != std::string::npos);
  CHECK(s.find("| opt=O3 | -12.5% over 2 of 2 cells | 2 better (exact) |") != std::string::npos);
  CHECK(s.find("| opt=O3 | — | 2 worse (exact) |") != std::string::npos);  // no ratio to average
}

TEST_CASE("export: per-run rows show the run's recorded comparison, not one against today's pool") {
  auto p = sizes_plan();
  auto runs = sizes_runs(p);
  // Run 3 (O3 batch=1) recorded +124.8% against the baseline of its time; later baseline runs
  // would give another number, which must not reach its row.
  record::Comparison recorded;
  recorded.baseline_run = 1;
  stats::Comparison t;
  t.delta_pct = 124.8;
  t.verdict = stats::Verdict::worse;
  recorded.metrics.push_back({"t", t});
  runs[2].comparison = recorded;
  runs.push_back(rec(p, 5, p.cells()[0], noisy(300), 4096, 0));  // a much slower baseline run, later
  auto table = doc::export_table(p, runs, false);
  auto csv = doc::format_export(table, doc::ExportFormat::csv);
  CHECK(csv.find("\r\n3,O3,1,pass,90.405,3584,3,124.8,,worse,") != std::string::npos);
  // A run with no recorded comparison says why, not a number computed now.
  CHECK(csv.find("\r\n4,O3,2,pass,90.405,3584,3,,,no comparison: the baseline was pending or not passing,") !=
        std::string::npos);
}

TEST_CASE("export: exact and absolute changes, markdown rounds as the document does and names units") {
  auto p = sizes_plan();
  auto runs = sizes_runs(p);
  auto table = doc::export_table(p, runs, true);
  auto json = doc::format_export(table, doc::ExportFormat::json);
  CHECK(json.find("\"bytes verdict\": \"better (exact)\"") != std::string::npos);
  CHECK(json.find("\"corrupted delta_abs\": 3,") != std::string::npos);
  CHECK(json.find("\"corrupted delta_pct\": null") != std::string::npos);
  auto md = doc::format_export(table, doc::ExportFormat::md);
  CHECK(
      md.find(
          "| opt | batch | n | outcome | t (us) | bytes (B) | corrupted | t delta_pct | t delta_abs (us) | t verdict |") !=
      std::string::npos);
  CHECK(md.find("| O3 | 1 | 8 | pass | 90.41 | 3584 | 3 | -10.0% |  | better | ") != std::string::npos);
  CHECK(md.find("| -12.5% |  | better (exact) |") != std::string::npos);
  CHECK(md.find("|  | +3 | worse (exact) |") != std::string::npos);
  // Every digit in CSV; a long median rounded in markdown.
  runs[0].data.samples["t"] = std::vector<double>(3, 153.2201035);
  auto per_run = doc::export_table(p, runs, false);
  CHECK(doc::format_export(per_run, doc::ExportFormat::csv).find(",153.2201035,") != std::string::npos);
  auto md_run = doc::format_export(per_run, doc::ExportFormat::md);
  CHECK(md_run.find("153.2201035") == std::string::npos);
  CHECK(md_run.find("| 153.2 |") != std::string::npos);
}

TEST_CASE("plot: SI tick labels, a log y axis across decades, no CI in a tooltip without one") {
  auto p = sizes_plan();
  auto runs = sizes_runs(p);
  for (auto& r : runs) {
    // Bytes in the millions; t across two decades for O3.
    r.data.samples["bytes"] = std::vector<double>(4, r.data.samples["bytes"][0] * 1000);
  }
  runs[3].data.samples["t"] = noisy(9000);
  auto svg = *doc::plot_svg(p, runs);
  CHECK(svg.find("> M<") == std::string::npos);
  CHECK(svg.find(" M</text>") != std::string::npos);  // 3.6 M .. 4.1 M bytes
  CHECK(svg.find("e+06") == std::string::npos);
  CHECK(svg.find("t (us) (log scale)") != std::string::npos);  // 90 .. 9000 us for O3
  CHECK(svg.find(">10 k</text>") != std::string::npos);
  CHECK(svg.find("bytes (B) (log scale)") == std::string::npos);
  // plot: {y: linear} keeps t linear; {y: log} makes bytes log too.
  auto linear = *doc::plot_svg(sizes_plan("plot: {y: linear}\n"), runs);
  CHECK(linear.find("(log scale)</text>") == std::string::npos);
  auto log = *doc::plot_svg(sizes_plan("plot: {y: log}\n"), runs);
  CHECK(log.find("bytes (B) (log scale)") != std::string::npos);
  // n = 1: the tooltip shows no CI.
  for (auto& r : runs) r.data.samples["t"] = {r.data.samples["t"][0]};
  auto one = *doc::plot_svg(p, runs);
  CHECK(one.find("median 100 (n=1: no 95% CI below 6 samples)") != std::string::npos);
  CHECK(one.find("95% CI [100, 100]") == std::string::npos);
}

TEST_CASE("plan: plot takes true, false or {y: log|linear}") {
  CHECK_FALSE(sizes_plan().plot_log_y.has_value());
  CHECK(sizes_plan("plot: {y: log}\n").plot_log_y == true);
  CHECK(sizes_plan("plot: {y: linear}\n").plot_log_y == false);
  CHECK(sizes_plan("plot: {y: log}\n").plot);
  CHECK_FALSE(sizes_plan("plot: false\n").plot);
  CHECK_THROWS_WITH(sizes_plan("plot: {y: square}\n"), doctest::Contains("plot.y must be log or linear, not 'square'"));
  CHECK_THROWS_WITH(sizes_plan("plot: {x: log}\n"), doctest::Contains("plot has no key 'x'"));
}
