#include "record/compare.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace abtrack::record {

std::vector<CellRuns> cells_with_runs(const plan::Plan& plan, const std::vector<Record>& records) {
  std::vector<CellRuns> out;
  for (auto& c : plan.cells()) out.push_back(CellRuns{std::move(c), {}});
  for (const auto& r : records) {
    if (r.experiment != plan.experiment) continue;
    auto cell = plan_cell(plan, r.cell);
    if (!cell) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const CellRuns& c) { return c.cell == *cell; });
    if (it != out.end()) it->runs.push_back(&r);
  }
  return out;
}

std::vector<const Record*> CellRuns::pool() const {
  std::vector<const Record*> out;
  if (runs.empty()) return out;
  const Code& code = runs.back()->code;
  for (const auto* r : runs)
    if (r->code.same_identity(code)) out.push_back(r);
  return out;
}

std::map<std::string, std::vector<double>> CellRuns::pooled_samples() const {
  std::map<std::string, std::vector<double>> out;
  for (const auto* r : pool()) {
    if (r->data.outcome == runner::Outcome::invalid) continue;
    for (const auto& [name, s] : r->data.samples) out[name].insert(out[name].end(), s.begin(), s.end());
  }
  return out;
}

const Record* CellRuns::deciding() const {
  if (runs.empty()) return nullptr;
  if (runs.back()->data.outcome == runner::Outcome::invalid) return runs.back();
  for (const auto* r : pool())
    if (r->data.outcome == runner::Outcome::fail) return r;
  return runs.back();
}

runner::Outcome CellRuns::outcome() const { return deciding()->data.outcome; }

std::vector<const plan::Metric*> compared_metrics(const plan::Plan& plan) {
  std::vector<const plan::Metric*> out;
  for (const auto& m : plan.metrics)
    if (m.better != plan::Better::none || (plan.prediction && plan.prediction->metric == m.name)) out.push_back(&m);
  return out;
}

Comparison compare_with_baseline(const plan::Plan& plan, const CellRuns& baseline_cell,
                                 const std::map<std::string, std::vector<double>>& samples) {
  Comparison c;
  c.baseline_run = baseline_cell.latest()->run;
  c.baseline_cell = baseline_cell.latest()->label();
  struct {
    std::map<std::string, std::vector<double>> samples;
  } baseline{baseline_cell.pooled_samples()};
  stats::CompareOptions opts;
  opts.alpha = plan.alpha;
  opts.min_effect = plan.min_effect_pct / 100.0;
  for (const auto* m : compared_metrics(plan)) {
    auto a = baseline.samples.find(m->name);
    auto b = samples.find(m->name);
    if (a == baseline.samples.end() || a->second.empty() || b == samples.end() || b->second.empty()) {
      c.notes.push_back(fmt::format("{}: no samples on {} side", m->name, b == samples.end() || b->second.empty() ? "this" : "the baseline"));
      continue;
    }
    opts.better = m->better == plan::Better::higher ? stats::Better::higher : stats::Better::lower;
    try {
      c.metrics.push_back(MetricComparison{m->name, stats::compare(a->second, b->second, opts)});
    } catch (const Error& e) {
      c.notes.push_back(fmt::format("{}: not compared: {}", m->name, e.diagnostics().front().message));
    }
  }
  return c;
}

}  // namespace abtrack::record
