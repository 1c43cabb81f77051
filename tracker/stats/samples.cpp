#include "stats/samples.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "util/error.hpp"

namespace abtrack::stats {

void check_samples(std::span<const double> samples, std::string_view what) {
  if (samples.empty()) {
    throw Error(Exit::usage, fmt::format("{}: no samples", what),
                "a comparison needs at least one sample on each side");
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      throw Error(Exit::usage, fmt::format("{}: sample {} is {}", what, i + 1, samples[i]),
                  "every sample must be a finite number");
    }
  }
}

void check_positive_samples(std::span<const double> samples, std::string_view what) {
  check_samples(samples, what);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!(samples[i] > 0)) {
      throw Error(Exit::usage,
                  fmt::format("{}: sample {} is {}, but the change is computed on log values, "
                              "so every sample must be > 0",
                              what, i + 1, samples[i]),
                  "compare only positive metrics (times, throughputs); a metric that can be 0 or "
                  "negative has no percent change");
    }
  }
}

}  // namespace abtrack::stats
