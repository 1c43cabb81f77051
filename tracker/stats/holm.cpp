#include "stats/holm.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "util/error.hpp"

namespace abtrack::stats {

std::vector<std::optional<double>> holm(std::span<const std::optional<double>> p_values) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p_values.size(); ++i) {
    if (!p_values[i]) continue;
    const double p = *p_values[i];
    if (!(p >= 0 && p <= 1)) {
      throw Error(Exit::usage, fmt::format("p-value {} of the family is {}, not in [0, 1]", i + 1, p));
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t l, std::size_t r) { return *p_values[l] < *p_values[r]; });
  std::vector<std::optional<double>> out(p_values.size());
  const std::size_t m = order.size();
  double running = 0;  // step-down: adjusted p-values never decrease along the sorted order
  for (std::size_t j = 0; j < m; ++j) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - j) * *p_values[order[j]]));
    out[order[j]] = running;
  }
  return out;
}

std::vector<double> holm(std::span<const double> p_values) {
  std::vector<std::optional<double>> in;
  in.reserve(p_values.size());
  for (double p : p_values) in.push_back(std::isnan(p) ? std::nullopt : std::optional<double>(p));
  std::vector<double> out;
  out.reserve(p_values.size());
  for (const auto& p : holm(in)) out.push_back(p ? *p : std::nan(""));
  return out;
}

}  // namespace abtrack::stats
