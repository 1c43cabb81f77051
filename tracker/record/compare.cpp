#include "record/compare.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace abtrack::record {

std::vector<CellRuns> cells_with_runs(const plan::Plan& plan, const std::vector<Record>& records) {
  std::vector<CellRuns> out;
  for (auto& c : plan.cells()) out.push_back(CellRuns{std::move(c), {}});
  // Called several times a step over every record: a record's cell is located by the position
  // of each of its values among its axis's values (a number in the mixed radix of the axes'
  // sizes), without building a plan::Cell per record. The product of the sizes is at most the
  // number of cells plan.cells() enumerated before exclusions.
  const auto& axes = plan.axes;
  auto value_index = [&](std::size_t axis, const std::string& value) -> std::optional<std::size_t> {
    const auto& values = axes[axis].values;
    auto it = std::find(values.begin(), values.end(), value);
    if (it == values.end()) return std::nullopt;
    return static_cast<std::size_t>(it - values.begin());
  };
  std::size_t combos = 1;
  for (const auto& a : axes) combos *= a.values.size();
  std::vector<int> slot(axes.empty() ? 0 : combos, -1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::size_t key = 0;
    for (std::size_t a = 0; a < axes.size(); ++a) key = key * axes[a].values.size() + *value_index(a, out[i].cell.values[a]);
    if (slot[key] < 0) slot[key] = static_cast<int>(i);
  }
  for (const auto& r : records) {
    if (r.experiment != plan.experiment || r.cell.size() != axes.size() || axes.empty()) continue;
    // As plan_cell: each axis's value is the first pair naming the axis, and must be one of its values.
    std::size_t key = 0;
    bool known = true;
    for (std::size_t a = 0; a < axes.size() && known; ++a) {
      auto kv = std::find_if(r.cell.begin(), r.cell.end(), [&](const auto& p) { return p.first == axes[a].name; });
      auto v = kv == r.cell.end() ? std::nullopt : value_index(a, kv->second);
      if (!v) known = false;
      else key = key * axes[a].values.size() + *v;
    }
    if (known && slot[key] >= 0) out[static_cast<std::size_t>(slot[key])].runs.push_back(&r);
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
