#pragma once
// Input checks shared by the statistics functions.
#include <span>
#include <string_view>

namespace abtrack::stats {

// Checks that `samples` is non-empty and every value is finite; `what` names the samples in the
// message ("A", "baseline time_us"). Throws abtrack::Error (Exit::usage) otherwise.
void check_samples(std::span<const double> samples, std::string_view what);

// As check_samples, and also that every value is > 0 (needed for log-scale effects).
// Throws abtrack::Error (Exit::usage) naming the first offending value.
void check_positive_samples(std::span<const double> samples, std::string_view what);

}  // namespace abtrack::stats
