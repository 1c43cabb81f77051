#pragma once
// `abtrack check`'s judgement, the CI gate: every cell against its baseline cell, exactly as the
// document's results table compares them (doc::compare_cells: pooled or paired, Holm across the
// experiment), or with --history each cell's newest pool against its previous code's pool; and
// what fails the check: a cell worse beyond min_effect, a pool that failed a gate, an invalid
// latest run. A check that fails nothing but compared nothing says why (Exit::nothing_compared).
// Pure: the command reads the records and prints.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "doc/render.hpp"
#include "plan/plan.hpp"
#include "record/compare.hpp"

namespace abtrack::experiment {

// The previous code's pool of a cell: on the latest run's kinds of GPU, the runs on the code
// identity of its newest run outside the latest run's pool (the most recent earlier code), as a
// CellRuns whose pool() is exactly those runs. No runs when the cell has no earlier code there.
record::CellRuns previous_pool(const record::CellRuns& c);

// Each cell of `cells` against its previous code (`previous`, previous_pool of each), p-values
// Holm-adjusted across the cells compared; `with_p` gets how many comparisons have a p-value.
// `cells` and `previous` must outlive the result.
std::vector<doc::CellComparison> compare_history(const plan::Plan& plan, const std::vector<record::CellRuns>& cells,
                                                 const std::vector<record::CellRuns>& previous, std::size_t& with_p);

// What a check found, by the cells' labels (plan::Plan::label).
struct CheckTally {
  std::vector<std::string> worse;              // a metric of `metrics` worse beyond min_effect
  std::vector<std::string> failed;             // the pool failed a gate
  std::vector<std::string> invalid;            // the latest run is invalid
  std::size_t pending = 0;                     // cells without a run
  std::vector<std::string> pending_baselines;  // baseline cells without a run
  std::size_t compared = 0;                    // cells with a comparison
  bool failing() const { return !worse.empty() || !failed.empty() || !invalid.empty(); }
};

// The tally of `cells` compared as `comps` (one each, in the same order) on `metrics`.
CheckTally tally_check(const plan::Plan& plan, const std::vector<record::CellRuns>& cells,
                       const std::vector<doc::CellComparison>& comps, const std::vector<const plan::Metric*>& metrics);

// Why a check compared nothing, and what to do about it.
struct NothingCompared {
  std::string what;    // "no cell has a run", "the baseline size=1 has no runs", ...
  std::string advice;  // "measure them first: abtrack run", ...
};

// Whether a check of `cells` cells that fails nothing compared nothing (a gate that compared
// nothing checked nothing: it must not read as a pass, e.g. a CI job whose baseline was never
// measured), and why. Without comparisons to make (no baseline, or no metric with `better:`) a
// check only checks the gates and invalid runs of what was measured: nothing when no cell was.
std::optional<NothingCompared> nothing_compared(const plan::Plan& plan, bool history, const CheckTally& tally,
                                                std::size_t cells);

}  // namespace abtrack::experiment
