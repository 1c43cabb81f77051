#include "stats/linear_fit.hpp"

#include <cmath>

#include <fmt/format.h>

#include "stats/samples.hpp"
#include "util/error.hpp"

namespace abtrack::stats {

LinearFit fit_linear(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) {
    throw Error(Exit::usage, fmt::format("model fit: {} x values but {} metric values", x.size(), y.size()));
  }
  check_samples(x, "model fit x");
  check_samples(y, "model fit metric");
  const std::size_t n = x.size();
  const double dn = static_cast<double>(n);
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= dn;
  my /= dn;
  // Centred sums: no cancellation when x is large (batch 4096) and the slope small.
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (!(sxx > 0)) {
    throw Error(Exit::usage, "model fit: the sweep axis has a single value",
                "a line needs at least 2 distinct values of x");
  }
  LinearFit f;
  f.n = n;
  f.marginal = sxy / sxx;
  f.fixed = my - f.marginal * mx;
  double sse = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = y[i] - (f.fixed + f.marginal * x[i]);
    sse += r * r;
  }
  f.r_squared = syy > 0 ? std::max(0.0, 1 - sse / syy) : 1.0;
  f.poor_fit = f.r_squared < poor_fit_r_squared;
  if (n > 2) {
    const double s2 = sse / (dn - 2);
    f.se_marginal = std::sqrt(s2 / sxx);
    f.se_fixed = std::sqrt(s2 * (1 / dn + mx * mx / sxx));
  }
  return f;
}

}  // namespace abtrack::stats
