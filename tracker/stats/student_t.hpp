#pragma once
// Student's t distribution, for the paired analysis's intervals (docs/statistics.md).

namespace abtrack::stats {

// P(T <= t) for T ~ Student's t with `df` > 0 degrees of freedom (df may be fractional; +inf
// gives the normal CDF). Through the regularized incomplete beta function, relative error ~1e-13.
// Throws abtrack::Error (Exit::usage) for df <= 0 or NaN arguments.
double student_t_cdf(double t, double df);

// The t with P(T <= t) = p, 0 < p < 1 (scipy.stats.t.ppf). Throws abtrack::Error (Exit::usage)
// for p outside (0, 1) or df <= 0.
double student_t_quantile(double p, double df);

}  // namespace abtrack::stats
