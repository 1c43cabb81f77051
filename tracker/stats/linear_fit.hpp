#pragma once
// Least-squares fit of a metric against a numeric sweep axis: metric = fixed + marginal * x.
#include <cstddef>
#include <optional>
#include <span>

namespace abtrack::stats {

// A fitted line with standard errors ("18.0 ms fixed + 1.05 ms/req").
struct LinearFit {
  double fixed = 0;                   // intercept
  double marginal = 0;                // slope: metric per unit of x
  std::optional<double> se_fixed;     // standard error of the intercept; empty with 2 points
  std::optional<double> se_marginal;  // standard error of the slope; empty with 2 points
  double r_squared = 1;               // 1 - SSE/SST; 1 when every y is equal (the line is exact)
  std::size_t n = 0;                  // points fitted
  bool poor_fit = false;              // r_squared < 0.9: show it as a poor fit, do not hide it
};

// R^2 below this is a poor fit.
inline constexpr double poor_fit_r_squared = 0.9;

// Ordinary least squares of y on x (the model `model: {metric: M, x: AXIS}`, per variant; the
// points may be every sample, with x repeated, or one median per cell).
// Throws abtrack::Error (Exit::usage) when x and y differ in length, a value is not finite, or
// there are fewer than 2 distinct x values.
LinearFit fit_linear(std::span<const double> x, std::span<const double> y);

}  // namespace abtrack::stats
