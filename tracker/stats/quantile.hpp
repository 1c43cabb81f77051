#pragma once
// Sample quantiles (Hyndman-Fan type 8), the mean, and the distribution-free confidence interval
// of the median from order statistics.
#include <cstddef>
#include <span>

#include "stats/interval.hpp"

namespace abtrack::stats {

// The q-quantile (0 <= q <= 1) of `samples` by the R8 rule: h = 1/3 + q(n + 1/3) (1-based),
// linear interpolation between neighbouring order statistics, clamped to [x(1), x(n)].
// Throws abtrack::Error (Exit::usage) for empty samples, a non-finite sample or q outside [0, 1].
double quantile(std::span<const double> samples, double q);

// The sample median (the R8 quantile at 1/2, which is the usual median).
// Throws abtrack::Error (Exit::usage) for empty samples or a non-finite sample.
double median(std::span<const double> samples);

// The arithmetic mean of `x`; 0 when it is empty.
inline double mean(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v;
  return x.empty() ? 0 : s / static_cast<double>(x.size());
}

// Which order statistics bound the median's confidence interval for n samples.
struct OrderStatisticCi {
  std::size_t lo = 0;     // 1-based position of the lower bound; 0 when unbounded
  std::size_t hi = 0;     // 1-based position of the upper bound; 0 when unbounded
  double coverage = 1.0;  // P(x(lo) <= median <= x(hi)) for a continuous distribution; 1 when unbounded
  bool bounded() const { return lo != 0; }
};

// The positions [x(lo), x(hi)] of the distribution-free CI of the median at `confidence`:
// K ~ Binomial(n, 1/2) (the number of samples below the true median); start at the mode, add the
// more probable neighbour (ties: the left one) until P(lo <= K <= hi - 1) >= confidence. When
// that needs K = 0 or K = n the interval is unbounded (at 0.95: fewer than 6 samples).
// Throws abtrack::Error (Exit::usage) for n == 0 or confidence outside (0, 1).
OrderStatisticCi median_ci_positions(std::size_t n, double confidence = 0.95);

// The distribution-free CI of the median of `samples` at `confidence` (see
// median_ci_positions); unbounded (-inf, +inf) with fewer than 6 samples at 0.95.
// Throws abtrack::Error (Exit::usage) for empty samples, a non-finite sample or a confidence
// outside (0, 1).
Interval median_ci(std::span<const double> samples, double confidence = 0.95);

}  // namespace abtrack::stats
