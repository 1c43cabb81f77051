#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "stats/linear_fit.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

TEST_CASE("stats: linear fit matches scipy.stats.linregress") {
  // Reference: scipy 1.10 linregress (tests/unit/oracle/stats_oracle.py, case "linfit").
  const std::vector<double> x{1, 2, 4, 8}, y{19, 20.1, 22.3, 26};
  const LinearFit f = fit_linear(x, y);
  CHECK(f.n == 4);
  CHECK(f.fixed == doctest::Approx(18.11304347826087).epsilon(1e-12));
  CHECK(f.marginal == doctest::Approx(0.9965217391304347).epsilon(1e-12));
  REQUIRE(f.se_fixed);
  REQUIRE(f.se_marginal);
  CHECK(*f.se_fixed == doctest::Approx(0.14847682856269362).epsilon(1e-9));
  CHECK(*f.se_marginal == doctest::Approx(0.032209146395567254).epsilon(1e-9));
  CHECK(f.r_squared == doctest::Approx(0.997914988678328).epsilon(1e-12));
  CHECK_FALSE(f.poor_fit);
}

TEST_CASE("stats: linear fit edge cases") {
  // Exact line through 2 points: no standard errors.
  const LinearFit two = fit_linear(std::vector<double>{16, 64}, std::vector<double>{34.8, 85.2});
  CHECK(two.marginal == doctest::Approx(1.05));
  CHECK(two.fixed == doctest::Approx(18.0));
  CHECK_FALSE(two.se_marginal);
  CHECK(two.r_squared == doctest::Approx(1.0));
  // A flat metric is described exactly by fixed + 0 x.
  const LinearFit flat = fit_linear(std::vector<double>{1, 2, 3}, std::vector<double>{5, 5, 5});
  CHECK(flat.marginal == 0);
  CHECK(flat.r_squared == 1);
  CHECK_FALSE(flat.poor_fit);
  // No linear relation: flagged, not hidden.
  const LinearFit poor = fit_linear(std::vector<double>{1, 2, 3, 4}, std::vector<double>{1, 4, 1, 4});
  CHECK(poor.r_squared < 0.9);
  CHECK(poor.poor_fit);
  // Samples with repeated x (every sample of each cell) are fine.
  const LinearFit rep = fit_linear(std::vector<double>{1, 1, 2, 2}, std::vector<double>{2, 4, 6, 8});
  CHECK(rep.marginal == doctest::Approx(4));
  CHECK(rep.fixed == doctest::Approx(-1));
}

TEST_CASE("stats: linear fit input errors") {
  CHECK_THROWS_AS(fit_linear(std::vector<double>{1, 2}, std::vector<double>{1}), abtrack::Error);
  CHECK_THROWS_AS(fit_linear(std::vector<double>{3, 3, 3}, std::vector<double>{1, 2, 3}), abtrack::Error);
  CHECK_THROWS_AS(fit_linear(std::vector<double>{}, std::vector<double>{}), abtrack::Error);
  CHECK_THROWS_AS(fit_linear(std::vector<double>{1, 2}, std::vector<double>{1, std::nan("")}), abtrack::Error);
}
