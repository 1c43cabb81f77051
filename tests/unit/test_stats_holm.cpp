#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "stats/holm.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

TEST_CASE("stats: Holm-Bonferroni adjusted p-values") {
  // Textbook: m = 3 defined p-values; NaN stays NaN and is not counted.
  const std::vector<double> p{0.01, std::nan(""), 0.04, 0.03};
  const std::vector<double> adj = holm(p);
  REQUIRE(adj.size() == 4);
  CHECK(adj[0] == doctest::Approx(0.03));
  CHECK(std::isnan(adj[1]));
  CHECK(adj[2] == doctest::Approx(0.06));
  CHECK(adj[3] == doctest::Approx(0.06));  // monotone: max(2 * 0.03, 0.03)
  // Capped at 1, order preserved, ties kept.
  const std::vector<double> q{0.5, 0.9, 0.5};
  const std::vector<double> adj_q = holm(q);
  CHECK(adj_q[0] == 1.0);
  CHECK(adj_q[1] == 1.0);
  CHECK(adj_q[2] == 1.0);
  const std::vector<double> single{0.02};
  CHECK(holm(single)[0] == 0.02);
  CHECK(holm(std::vector<double>{}).empty());
}

TEST_CASE("stats: Holm on optional p-values") {
  const std::vector<std::optional<double>> p{std::nullopt, 0.001, 0.02, std::nullopt, 0.04};
  const auto adj = holm(p);
  CHECK_FALSE(adj[0]);
  CHECK_FALSE(adj[3]);
  CHECK(*adj[1] == doctest::Approx(0.003));
  CHECK(*adj[2] == doctest::Approx(0.04));
  CHECK(*adj[4] == doctest::Approx(0.04));
  const std::vector<std::optional<double>> bad{0.5, 1.5};
  CHECK_THROWS_AS(holm(bad), abtrack::Error);
  const std::vector<double> negative{-0.1};
  CHECK_THROWS_AS(holm(negative), abtrack::Error);
}
