#pragma once
// The standard normal distribution.

namespace abtrack::stats {

// Phi(z), the standard normal CDF. Never throws.
double normal_cdf(double z);

// 1 - Phi(z), computed without cancellation for large z. Never throws.
double normal_sf(double z);

// Phi^-1(p) for 0 < p < 1 (relative error ~1e-15). Throws abtrack::Error (Exit::usage) for p
// outside (0, 1).
double normal_quantile(double p);

}  // namespace abtrack::stats
