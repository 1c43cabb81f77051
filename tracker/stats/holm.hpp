#pragma once
// Holm-Bonferroni adjustment of a family of p-values.
#include <optional>
#include <span>
#include <vector>

namespace abtrack::stats {

// Holm-Bonferroni adjusted p-values, in input order: with the m defined p-values sorted
// ascending, adj(i) = min(1, max_{j <= i} (m - j + 1) p(j)). An undefined p-value (empty) stays
// undefined and does not count in m. Throws abtrack::Error (Exit::usage) for a p outside [0, 1]
// or NaN (use an empty optional for "no p-value").
std::vector<std::optional<double>> holm(std::span<const std::optional<double>> p_values);

// The same for plain doubles, where NaN means "no p-value" and stays NaN.
// Throws abtrack::Error (Exit::usage) for a p outside [0, 1].
std::vector<double> holm(std::span<const double> p_values);

}  // namespace abtrack::stats
