#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "stats/sweep.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

TEST_CASE("stats: geometric mean of per-cell ratios") {
  const std::vector<std::optional<double>> r{0.5, 2.0, 0.8};
  const SweepSummary s = geomean_ratios(r);
  CHECK(s.cells == 3);
  CHECK(s.missing == 0);
  CHECK(s.warning.empty());
  CHECK(*s.ratio == doctest::Approx(std::cbrt(0.8)));
  CHECK(*s.delta_pct == doctest::Approx((std::cbrt(0.8) - 1) * 100));
  // From percent changes: -10% and +10% do not cancel to 0.
  const std::vector<std::optional<double>> d{-10.0, 10.0};
  const SweepSummary t = geomean_deltas_pct(d);
  CHECK(*t.ratio == doctest::Approx(std::sqrt(0.9 * 1.1)));
  CHECK(*t.delta_pct < 0);
}

TEST_CASE("stats: sweep summary warns when the arms cover different cells") {
  const std::vector<std::optional<double>> r{0.9, std::nullopt, 0.9, std::nullopt};
  const SweepSummary s = geomean_ratios(r);
  CHECK(s.cells == 2);
  CHECK(s.missing == 2);
  CHECK(*s.ratio == doctest::Approx(0.9));
  CHECK(s.warning.find("different cells") != std::string::npos);
  CHECK(s.warning.find("2 of 4") != std::string::npos);
  const std::vector<std::optional<double>> none{std::nullopt};
  const SweepSummary e = geomean_ratios(none);
  CHECK_FALSE(e.ratio);
  CHECK_FALSE(e.delta_pct);
  CHECK_FALSE(e.warning.empty());
}

TEST_CASE("stats: sweep summary rejects impossible ratios") {
  const std::vector<std::optional<double>> zero{1.0, 0.0};
  CHECK_THROWS_AS(geomean_ratios(zero), abtrack::Error);
  const std::vector<std::optional<double>> nan{std::nan("")};
  CHECK_THROWS_AS(geomean_ratios(nan), abtrack::Error);
  const std::vector<std::optional<double>> minus100{-100.0};
  CHECK_THROWS_AS(geomean_deltas_pct(minus100), abtrack::Error);
}
