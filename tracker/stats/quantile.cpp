#include "stats/quantile.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include <fmt/format.h>

#include "stats/samples.hpp"
#include "util/error.hpp"

namespace abtrack::stats {
namespace {

double r8_sorted(const std::vector<double>& x, double q) {
  const auto n = static_cast<double>(x.size());
  const double h = 1.0 / 3.0 + q * (n + 1.0 / 3.0);
  if (h <= 1) return x.front();
  if (h >= n) return x.back();
  const double f = std::floor(h);
  const auto j = static_cast<std::size_t>(f);  // 1-based, 1 <= j < n
  return x[j - 1] + (h - f) * (x[j] - x[j - 1]);
}

void check_confidence(double confidence) {
  if (!(confidence > 0 && confidence < 1)) {
    throw Error(Exit::usage, fmt::format("confidence {} is not between 0 and 1", confidence));
  }
}

// ln P(K = k) for K ~ Binomial(n, 1/2). Computed from min(k, n - k) so that the symmetric
// neighbours of the mode compare exactly equal and the "ties: left" rule applies as written.
double log_binomial_half_pmf(std::size_t n, std::size_t k) {
  const std::size_t j = std::min(k, n - k);
  const auto dn = static_cast<double>(n);
  const auto dj = static_cast<double>(j);
  return std::lgamma(dn + 1) - std::lgamma(dj + 1) - std::lgamma(dn - dj + 1) - dn * std::numbers::ln2;
}

}  // namespace

double quantile(std::span<const double> samples, double q) {
  check_samples(samples, "quantile");
  if (!(q >= 0 && q <= 1)) {
    throw Error(Exit::usage, fmt::format("quantile {} is not between 0 and 1", q));
  }
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());
  return r8_sorted(x, q);
}

double median(std::span<const double> samples) { return quantile(samples, 0.5); }

OrderStatisticCi median_ci_positions(std::size_t n, double confidence) {
  check_confidence(confidence);
  if (n == 0) throw Error(Exit::usage, "median confidence interval of no samples");
  // k ranges over the region [klo, khi] of K values covered; the interval is [x(klo), x(khi+1)].
  std::size_t klo = n / 2;
  if (n % 2 == 1) klo = (n - 1) / 2;  // two modes (n-1)/2 and (n+1)/2: ties go left
  std::size_t khi = klo;
  double covered = std::exp(log_binomial_half_pmf(n, klo));
  while (covered < confidence && (klo > 0 || khi < n)) {
    const double left = klo > 0 ? log_binomial_half_pmf(n, klo - 1) : -INFINITY;
    const double right = khi < n ? log_binomial_half_pmf(n, khi + 1) : -INFINITY;
    if (left >= right) {
      --klo;
      covered += std::exp(left);
    } else {
      ++khi;
      covered += std::exp(right);
    }
  }
  OrderStatisticCi ci;
  if (klo == 0 || khi == n) return ci;  // needs x(0) or x(n+1): unbounded
  ci.lo = klo;
  ci.hi = khi + 1;
  ci.coverage = std::min(covered, 1.0);
  return ci;
}

Interval median_ci(std::span<const double> samples, double confidence) {
  check_samples(samples, "median confidence interval");
  const OrderStatisticCi pos = median_ci_positions(samples.size(), confidence);
  if (!pos.bounded()) return Interval{};
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());
  return Interval{x[pos.lo - 1], x[pos.hi - 1]};
}

}  // namespace abtrack::stats
