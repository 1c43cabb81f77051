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

}  // namespace abtrack::stats
