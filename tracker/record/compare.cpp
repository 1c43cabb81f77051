#include "record/compare.hpp"

#include "runner/environment.hpp"
#include "stats/paired.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace abtrack::record {

CellLocator::CellLocator(const plan::Plan& plan) : m_plan(plan), m_cells(plan.cells()) {
  // The product of the axes' sizes is at most the number of cells plan.cells() enumerated
  // before exclusions.
  const auto& axes = plan.axes;
  std::size_t combos = 1;
  for (const auto& a : axes) combos *= a.values.size();
  m_slot.assign(axes.empty() ? 0 : combos, -1);
  for (std::size_t i = 0; i < m_cells.size(); ++i) {
    std::size_t key = 0;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const auto& values = axes[a].values;
      key = key * values.size() +
            static_cast<std::size_t>(std::find(values.begin(), values.end(), m_cells[i].values[a]) - values.begin());
    }
    if (m_slot[key] < 0) m_slot[key] = static_cast<int>(i);
  }
}

template <class ValueOf>
std::optional<std::size_t> CellLocator::locate(std::string_view experiment, std::size_t pairs,
                                               const ValueOf& value_of) const {
  const auto& axes = m_plan.axes;
  if (experiment != m_plan.experiment || pairs != axes.size() || axes.empty()) return std::nullopt;
  std::size_t key = 0;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    std::optional<std::string_view> v = value_of(axes[a].name);
    if (!v) return std::nullopt;
    const auto& values = axes[a].values;
    auto it = std::find(values.begin(), values.end(), *v);
    if (it == values.end()) return std::nullopt;
    key = key * values.size() + static_cast<std::size_t>(it - values.begin());
  }
  if (m_slot[key] < 0) return std::nullopt;
  return static_cast<std::size_t>(m_slot[key]);
}

std::optional<std::size_t> CellLocator::find(const Record& r) const {
  return locate(r.experiment, r.cell.size(), [&](const std::string& axis) -> std::optional<std::string_view> {
    auto kv = std::find_if(r.cell.begin(), r.cell.end(), [&](const auto& p) { return p.first == axis; });
    if (kv == r.cell.end()) return std::nullopt;
    return kv->second;
  });
}

std::optional<std::size_t> CellLocator::find(const HeaderView& h) const {
  return locate(h.experiment, h.cell_size, [&](const std::string& axis) { return h.value(axis); });
}

std::vector<CellRuns> cells_with_runs(const plan::Plan& plan, const std::vector<Record>& records) {
  // Called several times a step: records are located by CellLocator, not compared with each cell.
  CellLocator locator(plan);
  std::vector<CellRuns> out;
  out.reserve(locator.cells().size());
  for (const auto& c : locator.cells()) out.push_back(CellRuns{c, {}});
  for (const auto& r : records)
    if (auto i = locator.find(r)) out[*i].runs.push_back(&r);
  return out;
}

std::set<std::string> gpu_kinds(const Record& r) {
  for (const auto& inv : r.data.invocations) {
    if (!inv.watch || !inv.watch->nvml) continue;
    std::set<std::string> seen;
    for (const auto& w : inv.watch->gpus) {
      // By UUID; else (no UUID) by NVML's index, which is the GPU's place in env.gpus.
      auto g = std::find_if(r.env.gpus.begin(), r.env.gpus.end(),
                            [&](const runner::Gpu& x) { return !w.uuid.empty() && x.uuid == w.uuid; });
      if (g != r.env.gpus.end()) seen.insert(g->name);
      else if (w.uuid.empty() && w.index < r.env.gpus.size()) seen.insert(r.env.gpus[w.index].name);
    }
    if (!seen.empty()) return seen;
    break;
  }
  return runner::gpu_kinds(r.env.gpus);
}

std::string gpu_kinds_key(const Record& r) { return fmt::format("{}", fmt::join(gpu_kinds(r), "\n")); }

bool same_pool(const Record& a, const Record& b) {
  return a.code.same_identity(b.code) && gpu_kinds(a) == gpu_kinds(b);
}

CellRuns baseline_runs(const CellRuns& base, const CellRuns& cell) {
  if (!cell.latest() || !base.latest()) return base;
  const auto kinds = gpu_kinds(*cell.latest());
  if (gpu_kinds(*base.latest()) == kinds) return base;
  CellRuns on{base.cell, {}};
  for (const auto* r : base.runs)
    if (gpu_kinds(*r) == kinds) on.runs.push_back(r);
  return on.runs.empty() ? base : on;
}

std::vector<const Record*> CellRuns::pool() const {
  std::vector<const Record*> out;
  if (runs.empty()) return out;
  const Record& latest = *runs.back();
  const auto kinds = gpu_kinds(latest);
  for (const auto* r : runs)
    if (r == &latest || (r->code.same_identity(latest.code) && gpu_kinds(*r) == kinds)) out.push_back(r);
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
  // An invalid latest run measured nothing: the pool's valid runs (on the same code) decide,
  // if it has any.
  const Record* last_valid = nullptr;
  for (const auto* r : pool()) {
    if (r->data.outcome == runner::Outcome::fail) return r;
    if (r->data.outcome == runner::Outcome::pass) last_valid = r;
  }
  return last_valid ? last_valid : runs.back();
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
      c.notes.push_back(fmt::format("{}: no samples on {} side", m->name,
                                    b == samples.end() || b->second.empty() ? "this" : "the baseline"));
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

namespace {

// The round a run was measured in, as "batch/round"; empty when it was not interleaved.
std::string round_key(const Record& r) {
  if (!r.data.schedule || r.data.schedule->batch.empty()) return {};
  return r.data.schedule->batch + "/" + std::to_string(r.data.schedule->round);
}

// Each measured round's samples of `metric` over the pool's valid runs, by round; `sequential`
// collects the rounds of batches that ran `rounds: auto`.
std::map<std::string, std::vector<double>> by_round(const CellRuns& c, const std::string& metric,
                                                    std::set<std::string>& sequential) {
  std::map<std::string, std::vector<double>> out;
  for (const auto* r : c.pool()) {
    if (r->data.outcome == runner::Outcome::invalid) continue;
    auto key = round_key(*r);
    auto s = r->data.samples.find(metric);
    if (key.empty() || s == r->data.samples.end() || s->second.empty()) continue;
    out[key].insert(out[key].end(), s->second.begin(), s->second.end());
    if (r->data.schedule->sequential) sequential.insert(key);
  }
  return out;
}

}  // namespace

std::optional<Comparison> compare_run(const plan::Plan& plan, const std::vector<Record>& records) {
  if (records.empty()) return std::nullopt;
  const Record& rec = records.back();
  const auto& run = rec.data;
  auto base_cell = plan.baseline_for(run.cell);
  if (!base_cell || *base_cell == run.cell || run.outcome != runner::Outcome::pass) return std::nullopt;
  const auto cells = cells_with_runs(plan, records);
  auto it = std::find_if(cells.begin(), cells.end(), [&](const CellRuns& c) { return c.cell == *base_cell; });
  auto self = std::find_if(cells.begin(), cells.end(), [&](const CellRuns& x) { return x.cell == run.cell; });
  if (it == cells.end() || self == cells.end()) return std::nullopt;
  const CellRuns base = baseline_runs(*it, *self);
  if (!base.latest() || base.outcome() != runner::Outcome::pass) return std::nullopt;
  Comparison c = compare_with_baseline(plan, base, run.samples);
  if (run.schedule && !run.schedule->batch.empty()) pair_by_round(plan, base, *self, c);
  return c;
}

Comparison compare_pools(const plan::Plan& plan, const CellRuns& baseline, const CellRuns& cell) {
  Comparison c = compare_with_baseline(plan, baseline, cell.pooled_samples());
  pair_by_round(plan, baseline, cell, c);
  return c;
}

std::vector<stats::RoundPair> paired_rounds(const CellRuns& baseline, const CellRuns& cell, const std::string& metric,
                                            bool& sequential) {
  std::set<std::string> auto_rounds;
  auto a = by_round(baseline, metric, auto_rounds), b = by_round(cell, metric, auto_rounds);
  std::vector<stats::RoundPair> rounds;
  sequential = false;
  for (auto& [key, samples] : b)
    if (auto it = a.find(key); it != a.end()) {
      rounds.push_back(stats::RoundPair{it->second, samples});
      // Rounds of a `rounds: auto` batch were looked at after each round: judged anytime-valid.
      sequential = sequential || auto_rounds.contains(key);
    }
  return rounds;
}

void pair_by_round(const plan::Plan& plan, const CellRuns& baseline, const CellRuns& cell, Comparison& c) {
  stats::CompareOptions opts;
  opts.alpha = plan.alpha;
  opts.min_effect = plan.min_effect_pct / 100.0;
  for (auto& m : c.metrics) {
    auto rounds = paired_rounds(baseline, cell, m.metric, opts.sequential);
    if (rounds.size() < 2) continue;
    const auto* spec = plan.metric(m.metric);
    opts.better = spec && spec->better == plan::Better::higher ? stats::Better::higher : stats::Better::lower;
    try {
      m.result = stats::compare_paired(rounds, opts);
    } catch (const Error& e) {
      // (a sample <= 0 has no ratio: the pooled comparison stands)
      c.notes.push_back(fmt::format("{}: not paired: {}", m.metric, e.diagnostics().front().message));
    }
  }
}

}  // namespace abtrack::record
