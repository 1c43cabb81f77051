// `abtrack check`'s judgement (check.hpp).
#include "experiment/check.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runner/run.hpp"
#include "stats/compare.hpp"

namespace abtrack::experiment {

using record::CellRuns;
using record::Record;
using runner::Outcome;

CellRuns previous_pool(const CellRuns& c) {
  CellRuns out{c.cell, {}};
  if (!c.latest()) return out;  // pending
  auto newest = c.pool();
  auto in_newest = [&](const Record* r) { return std::find(newest.begin(), newest.end(), r) != newest.end(); };
  // On the newest pool's kinds of GPU: another card is not earlier code.
  const auto kinds = record::gpu_kinds(*c.latest());
  const Record* prev = nullptr;
  for (auto it = c.runs.rbegin(); it != c.runs.rend() && !prev; ++it)
    if (!in_newest(*it) && record::gpu_kinds(**it) == kinds) prev = *it;
  if (!prev) return out;
  for (const auto* r : c.runs)
    if (!in_newest(r) && (r == prev || record::same_pool(*r, *prev))) out.runs.push_back(r);
  return out;
}

// Each cell against its previous code, p-values Holm-adjusted across the cells compared.
std::vector<doc::CellComparison> compare_history(const plan::Plan& plan, const std::vector<CellRuns>& cells,
                                                 const std::vector<CellRuns>& previous, std::size_t& with_p) {
  std::vector<doc::CellComparison> comps(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    auto& cc = comps[i];
    cc.cell = &cells[i];
    if (!cells[i].latest()) continue;
    if (!previous[i].latest()) {
      cc.unavailable = "no earlier code";
      continue;
    }
    cc.base = &previous[i];
    if (cells[i].outcome() != Outcome::pass)
      cc.unavailable = cells[i].outcome() == Outcome::fail ? "no verdict: a gate failed" : "no verdict: invalid run";
    else if (previous[i].outcome() != Outcome::pass)
      cc.unavailable = "no verdict: earlier code " + std::string(runner::to_string(previous[i].outcome()));
    else
      // Pools of two codes of one cell are never measured in the same rounds: pooled samples.
      cc.result = record::compare_with_baseline(plan, previous[i], cells[i].pooled_samples());
  }
  with_p = doc::adjust_across_cells(comps);
  return comps;
}

CheckTally tally_check(const plan::Plan& plan, const std::vector<CellRuns>& cells,
                       const std::vector<doc::CellComparison>& comps, const std::vector<const plan::Metric*>& metrics) {
  CheckTally t;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    const auto& cc = comps[i];
    const Record* latest = c.latest();
    const std::string label = plan.label(c.cell);
    if (!latest) {
      ++t.pending;
      if (cc.is_baseline) t.pending_baselines.push_back(label);
    } else {
      if (c.outcome() == Outcome::fail) t.failed.push_back(label);
      if (latest->data.outcome == Outcome::invalid) t.invalid.push_back(label);
    }
    if (!cc.result.metrics.empty()) ++t.compared;
    const bool worse = std::any_of(metrics.begin(), metrics.end(), [&](const plan::Metric* m) {
      return std::any_of(cc.result.metrics.begin(), cc.result.metrics.end(), [&](const record::MetricComparison& x) {
        return x.metric == m->name && x.result.verdict == stats::Verdict::worse;
      });
    });
    if (worse) t.worse.push_back(label);
  }
  return t;
}

std::optional<NothingCompared> nothing_compared(const plan::Plan& plan, bool history, const CheckTally& tally,
                                                std::size_t cells) {
  const bool compares = (history || plan.baseline) && !record::compared_metrics(plan).empty();
  if (tally.failing() || !(compares ? tally.compared == 0 : tally.pending == cells)) return std::nullopt;
  NothingCompared n{"", "measure them first: abtrack run"};
  if (tally.pending == cells) {
    n.what = "no cell has a run";
  } else if (history) {
    n.what = "no cell has runs on earlier code";
    n.advice = "--history compares a cell's newest code with the code it ran on before";
  } else if (!tally.pending_baselines.empty()) {
    n.what =
        fmt::format("the baseline {} no runs", tally.pending_baselines.size() == 1
                                                   ? tally.pending_baselines.front() + " has"
                                                   : fmt::format("{} have", fmt::join(tally.pending_baselines, ", ")));
  } else {
    n.what = "no cell but the baseline has a run to compare";
    n.advice = "measure the cells that differ from the baseline: abtrack run";
  }
  return n;
}

}  // namespace abtrack::experiment
