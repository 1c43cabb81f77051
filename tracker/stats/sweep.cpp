#include "stats/sweep.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "stats/interval.hpp"
#include "util/error.hpp"

namespace abtrack::stats {

SweepSummary geomean_ratios(std::span<const std::optional<double>> ratios) {
  SweepSummary s;
  double log_sum = 0;
  for (std::size_t i = 0; i < ratios.size(); ++i) {
    if (!ratios[i]) {
      ++s.missing;
      continue;
    }
    const double r = *ratios[i];
    if (!(std::isfinite(r) && r > 0)) {
      throw Error(Exit::usage, fmt::format("ratio of cell {} is {}; a geometric mean needs ratios > 0", i + 1, r));
    }
    log_sum += std::log(r);
    ++s.cells;
  }
  if (s.cells > 0) {
    const double mean_log = log_sum / static_cast<double>(s.cells);
    s.ratio = std::exp(mean_log);
    s.delta_pct = pct_of_log_ratio(mean_log);
  }
  if (s.missing > 0) {
    s.warning = fmt::format("the arms cover different cells: {} of {} cell{} left out of the geometric mean", s.missing,
                            ratios.size(), ratios.size() == 1 ? "" : "s");
  }
  return s;
}

SweepSummary geomean_deltas_pct(std::span<const std::optional<double>> deltas_pct) {
  std::vector<std::optional<double>> ratios;
  ratios.reserve(deltas_pct.size());
  for (std::size_t i = 0; i < deltas_pct.size(); ++i) {
    if (!deltas_pct[i]) {
      ratios.emplace_back();
      continue;
    }
    const double d = *deltas_pct[i];
    if (!(std::isfinite(d) && d > -100)) {
      throw Error(Exit::usage,
                  fmt::format("change of cell {} is {}%; a geometric mean needs changes > -100%", i + 1, d));
    }
    ratios.emplace_back(1 + d / 100);
  }
  return geomean_ratios(ratios);
}

}  // namespace abtrack::stats
