#pragma once
// The Hodges-Lehmann shift between two samples on log values, with the Moses interval.
#include <cstdint>
#include <span>

#include "stats/interval.hpp"

namespace abtrack::stats {

// The shift of b relative to a on the log scale.
struct LogShift {
  double shift = 0;               // median of all n1*n2 differences ln b_j - ln a_i
  Interval ci;                    // Moses interval of the shift (log units); unbounded when C < 1
  double ratio() const;           // exp(shift): the typical b / a
  double delta_pct() const;       // (exp(shift) - 1) * 100
  Interval delta_ci_pct() const;  // (exp(ci) - 1) * 100; unbounded stays (-inf, +inf)
};

// The shift of b relative to a on the raw scale (in the values' unit).
struct Shift {
  double shift = 0;  // median of all n1*n2 differences b_j - a_i
  Interval ci;       // Moses interval of the shift; unbounded when C < 1
};

// The k-th smallest (1-based) of the differences ln b_j - ln a_i, without forming all n1*n2 of
// them (bisection on the value, O((n1+n2) log) time, O(n1+n2) memory).
// Throws abtrack::Error (Exit::usage) for an empty side, a non-finite or non-positive sample,
// or k outside [1, n1*n2].
double kth_log_difference(std::span<const double> a, std::span<const double> b, std::uint64_t k);

// The Hodges-Lehmann estimate of ln b - ln a (the median of all n1*n2 differences) with the
// Moses interval [d(C), d(n1n2+1-C)], C = round(n1n2/2 - z sqrt(n1n2(N+1)/12)), z = 1.96 at 0.95
// (else the normal quantile of (1+confidence)/2).
// Throws abtrack::Error (Exit::usage) for an empty side, a non-finite or non-positive sample
// ("the change is computed on log values") or a confidence outside (0, 1).
LogShift hodges_lehmann_log(std::span<const double> a, std::span<const double> b, double confidence = 0.95);

// The same on raw values: the median of the differences b_j - a_i and its Moses interval, for
// metrics that can be 0 or negative (no ratio exists). Throws abtrack::Error (Exit::usage) for
// an empty side, a non-finite sample or a confidence outside (0, 1).
Shift hodges_lehmann(std::span<const double> a, std::span<const double> b, double confidence = 0.95);

}  // namespace abtrack::stats
