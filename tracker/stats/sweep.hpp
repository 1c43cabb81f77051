#pragma once
// Summaries across a sweep axis: the geometric mean of per-cell ratios.
#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace abtrack::stats {

// The geometric-mean change across the cells of a sweep. No CI: the per-cell CIs do not combine
// into one for the mean (docs/statistics.md says why).
struct SweepSummary {
  std::optional<double> ratio;      // geometric mean of the per-cell ratios B / A; empty when no cell has both arms
  std::optional<double> delta_pct;  // (ratio - 1) * 100
  std::size_t cells = 0;            // cells that entered the mean
  std::size_t missing = 0;          // cells that only one arm covers (given as empty ratios)
  std::string warning;              // non-empty when missing > 0: "the arms cover different cells ..."
};

// The geometric mean of per-cell ratios (B / A, e.g. Comparison::ratio), one entry per cell of
// the sweep; an empty entry is a cell that only one arm covers and is left out with a warning.
// Throws abtrack::Error (Exit::usage) for a ratio that is not finite and > 0.
SweepSummary geomean_ratios(std::span<const std::optional<double>> ratios);

// The same from per-cell changes in percent (Delta% = (ratio - 1) * 100).
// Throws abtrack::Error (Exit::usage) for a change that is not finite and > -100%.
SweepSummary geomean_deltas_pct(std::span<const std::optional<double>> deltas_pct);

}  // namespace abtrack::stats
