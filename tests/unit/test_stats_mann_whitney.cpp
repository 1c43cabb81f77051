#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "stats/mann_whitney.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

// Reference p-values: scipy 1.10 stats.mannwhitneyu(a, b, alternative='two-sided', method=...,
// use_continuity=True), produced by tests/unit/oracle/stats_oracle.py (test_stats_oracle.cpp
// checks many more at test time).
TEST_CASE("stats: Mann-Whitney exact p-values match scipy") {
  struct Case {
    std::vector<double> a, b;
    double p;
  };
  const Case cases[] = {
      {{1, 2, 3}, {4, 5, 6}, 0.1},
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 1.082508822446903e-05},
      {{10.1, 10.4, 9.8, 10.0, 10.7, 9.9, 10.2, 10.3}, {9.7, 9.6, 10.05, 9.5, 9.85, 9.55, 9.65, 9.45},
       0.0018648018648018648},
      {{1, 2, 3, 4}, {5, 6, 7, 8}, 0.02857142857142857},
      {{5}, {1, 2, 3, 4, 6, 7, 8, 9, 10, 11}, 0.9090909090909092},
  };
  for (const Case& c : cases) {
    const UTest t = mann_whitney_u(c.a, c.b);
    REQUIRE(t.p_value);
    CHECK(t.method == UMethod::exact);
    CHECK(*t.p_value == doctest::Approx(c.p).epsilon(1e-12));
    // Two-sided: swapping the arms gives the same p.
    CHECK(*mann_whitney_u(c.b, c.a).p_value == doctest::Approx(c.p).epsilon(1e-12));
  }
}

TEST_CASE("stats: Mann-Whitney with ties uses the corrected normal approximation") {
  const std::vector<double> a{1, 1, 2, 2, 3, 3, 3, 4}, b{2, 3, 4, 4, 5, 5, 6};
  const UTest t = mann_whitney_u(a, b);
  CHECK(t.ties);
  CHECK(t.method == UMethod::asymptotic);
  CHECK(*t.p_value == doctest::Approx(0.025144761173357368).epsilon(1e-12));
  CHECK(t.u_a + t.u_b == 56);
  const UTest t2 = mann_whitney_u(std::vector<double>{1, 1, 1}, std::vector<double>{2, 2, 2});
  CHECK(*t2.p_value == doctest::Approx(0.04685417760387376).epsilon(1e-12));
}

TEST_CASE("stats: Mann-Whitney statistic and method selection") {
  const UTest t = mann_whitney_u(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
  CHECK(t.u_a == 0);
  CHECK(t.u_b == 9);
  std::vector<double> a(51), b(51);
  for (int i = 0; i < 51; ++i) {
    a[i] = i;
    b[i] = i + 0.5;
  }
  CHECK(mann_whitney_u(a, b).method == UMethod::asymptotic);  // > 50 per side
  a.pop_back();
  b.pop_back();
  CHECK(mann_whitney_u(a, b).method == UMethod::exact);
  // U1 == U2: p is 1, not above it.
  CHECK(*mann_whitney_u(std::vector<double>{1, 4}, std::vector<double>{2, 3}).p_value == 1.0);
}

TEST_CASE("stats: all-equal samples have no p-value") {
  const UTest t = mann_whitney_u(std::vector<double>{3, 3, 3, 3}, std::vector<double>{3, 3, 3});
  CHECK(t.method == UMethod::all_equal);
  CHECK_FALSE(t.p_value);
  CHECK(to_string(t.method) == "all samples are equal");
}

TEST_CASE("stats: smallest possible p of the exact test") {
  CHECK(min_p_value(3, 3) == doctest::Approx(0.1));
  CHECK(min_p_value(4, 4) == doctest::Approx(0.0285714285714));
  CHECK(min_p_value(1, 1) == 1.0);
  CHECK(min_p_value(0, 5) == 1.0);
  // Past 2^53: C(60, 30) = 118264581564861424, ln C(1000, 500) = 689.467261567851.
  CHECK(min_p_value(30, 30) * 118264581564861424.0 / 2 == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(std::log(min_p_value(500, 500) / 2) == doctest::Approx(-689.467261567851).epsilon(1e-12));
  // The exact distribution reaches it: fully separated samples.
  CHECK(2 * u_exact_sf(4, 4, 16) == doctest::Approx(min_p_value(4, 4)));
  CHECK(u_exact_sf(5, 7, 0) == 1.0);
  CHECK(u_exact_sf(5, 7, 36) == 0.0);
  CHECK_THROWS_AS(u_exact_sf(0, 3, 1), abtrack::Error);
}

TEST_CASE("stats: Mann-Whitney input errors") {
  const std::vector<double> empty, one{1.0};
  CHECK_THROWS_AS(mann_whitney_u(empty, one), abtrack::Error);
  CHECK_THROWS_AS(mann_whitney_u(one, std::vector<double>{std::nan("")}), abtrack::Error);
  // One sample per side is not an error.
  CHECK(*mann_whitney_u(one, std::vector<double>{2.0}).p_value == 1.0);
}
