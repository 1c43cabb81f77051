#pragma once
// Reading an experiment's records against its plan: each cell's runs, and comparisons with
// the baseline cell. Pure.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "record/cache.hpp"
#include "record/record.hpp"
#include "stats/paired.hpp"

namespace abtrack::record {

// The kinds of GPU a run measured (runner::gpu_kinds): those of the GPUs its command saw (its
// first watched invocation's, by UUID: on a host with two kinds of card, the cell's), else of
// every GPU of its machine (not watched: no NVML, or a record from before the watcher).
std::set<std::string> gpu_kinds(const Record& r);

// gpu_kinds as one string, the names joined by '\n' (what a cache frame's header keeps).
std::string gpu_kinds_key(const Record& r);

// Whether two runs of one cell measured the same thing and pool: the same code run the same way
// (Code::same_identity) on the same kinds of GPU (gpu_kinds).
bool same_pool(const Record& a, const Record& b);

// One cell of the plan with its runs (ascending), the latest last.
struct CellRuns {
  plan::Cell cell;
  std::vector<const Record*> runs;
  const Record* latest() const { return runs.empty() ? nullptr : runs.back(); }
  // The runs on the latest run's code identity (its Abtrack-Code) and kinds of GPU, oldest
  // first (same_pool): a run on new code, or on another card, starts a new pool.
  std::vector<const Record*> pool() const;
  // Each metric's samples pooled over the pool's runs that measured it (not invalid ones).
  std::map<std::string, std::vector<double>> pooled_samples() const;
  // The cell's outcome over its pool: fail when any run of the pool failed a gate, else pass when
  // one passed, else invalid (every run of the pool is). An invalid latest run thus leaves the
  // outcome, the pooled samples and the comparisons to the earlier valid runs on the same code.
  // Requires a run.
  runner::Outcome outcome() const;
  // The pool's run that decides the outcome (the first failing one, else the latest passing one,
  // else the latest).
  const Record* deciding() const;
};

// The baseline cell `base` as `cell` is compared with it: its runs on the kinds of GPU of `cell`'s
// latest run when it has some there (the latest of those decides its pool), else all of them
// (compared across cards: the document warns). A cell measured on an H100 is compared with the
// baseline's H100 runs, even when the baseline ran on an H200 since.
CellRuns baseline_runs(const CellRuns& base, const CellRuns& cell);

// Finds which of plan.cells() a record belongs to, from the positions of its values among
// their axes' values (a number in the mixed radix of the axes' sizes), without building a
// plan::Cell per record: a step locates every record of the history this way.
class CellLocator {
 public:
  explicit CellLocator(const plan::Plan& plan);
  // plan.cells(), plan order.
  const std::vector<plan::Cell>& cells() const { return m_cells; }
  // The index in cells() of the record's cell; nullopt for another experiment, or a cell the
  // plan does not have (as plan_cell: each axis's value is the first pair naming the axis).
  std::optional<std::size_t> find(const Record& r) const;
  std::optional<std::size_t> find(const HeaderView& h) const;

 private:
  template <class ValueOf>
  std::optional<std::size_t> locate(std::string_view experiment, std::size_t pairs, const ValueOf& value_of) const;
  const plan::Plan& m_plan;
  std::vector<plan::Cell> m_cells;
  std::vector<int> m_slot;  // mixed-radix key -> index in m_cells, -1 for an excluded combination
};

// Every cell of the plan (plan order) with the records that belong to it. Records whose cell
// the plan no longer has are left out. `records` must be sorted by run number.
std::vector<CellRuns> cells_with_runs(const plan::Plan& plan, const std::vector<Record>& records);

// The metrics a comparison covers: those with `better:`, and the prediction's metric.
std::vector<const plan::Metric*> compared_metrics(const plan::Plan& plan);

// Compares `samples` (a run of some cell) with the baseline record's samples, metric by
// metric; a metric that cannot be compared (missing, values <= 0) is named in notes.
// Never throws for bad data.
Comparison compare_with_baseline(const plan::Plan& plan, const CellRuns& baseline,
                                 const std::map<std::string, std::vector<double>>& samples);

// Compares a cell's pool with its baseline cell's pool, metric by metric: paired by round
// (stats::compare_paired) when at least two rounds of one invocation measured both (their
// records' schedule has the same batch and round), over those rounds; else the pooled samples
// (compare_with_baseline). Each metric's result says which (stats::Comparison::analysis).
Comparison compare_pools(const plan::Plan& plan, const CellRuns& baseline, const CellRuns& cell);

// The comparison a run's record carries: the last of `records` (sorted by run number) against
// its baseline cell's pool as `records` have it, metric by metric; paired by round (over the
// rounds of its pool) where its invocation measured both in two rounds or more. Empty for a
// baseline run, a run that did not pass, or a baseline cell without a passing pool.
std::optional<Comparison> compare_run(const plan::Plan& plan, const std::vector<Record>& records);

// The rounds in which one invocation measured `metric` in both cells (their records' schedule has
// the same batch and round), over each cell's pool; `sequential` says whether a round came from a
// `rounds: auto` batch.
std::vector<stats::RoundPair> paired_rounds(const CellRuns& baseline, const CellRuns& cell, const std::string& metric,
                                            bool& sequential);

// Replaces each metric of `c` that at least two rounds of one invocation measured in both cells
// with its paired comparison over those rounds (anytime-valid when a round came from a
// `rounds: auto` batch); other metrics keep the pooled comparison.
void pair_by_round(const plan::Plan& plan, const CellRuns& baseline, const CellRuns& cell, Comparison& c);

}  // namespace abtrack::record
