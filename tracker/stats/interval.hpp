#pragma once
// A closed interval [lo, hi]; an unbounded one has infinite ends.
#include <cmath>
#include <limits>

namespace abtrack::stats {

// A confidence interval. Too few samples give an unbounded interval: lo = -inf, hi = +inf.
// Never throws.
struct Interval {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();

  // True when both ends are finite.
  bool bounded() const { return std::isfinite(lo) && std::isfinite(hi); }
  // True when lo <= x <= hi.
  bool contains(double x) const { return lo <= x && x <= hi; }
};

// A change in percent from a log ratio: (exp(x) - 1) * 100, keeping infinities.
inline double pct_of_log_ratio(double log_ratio) { return std::expm1(log_ratio) * 100; }

}  // namespace abtrack::stats
