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
      {{10.1, 10.4, 9.8, 10.0, 10.7, 9.9, 10.2, 10.3},
       {9.7, 9.6, 10.05, 9.5, 9.85, 9.55, 9.65, 9.45},
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

TEST_CASE("stats: Mann-Whitney with ties and few samples uses the exact permutation distribution") {
  // Reference p-values: tests/unit/oracle/permutation_oracle.py (every assignment enumerated).
  const std::vector<double> a{1, 1, 2, 2, 3, 3, 3, 4}, b{2, 3, 4, 4, 5, 5, 6};
  const UTest t = mann_whitney_u(a, b);
  CHECK(t.ties);
  CHECK(t.method == UMethod::exact_ties);
  CHECK(*t.p_value == doctest::Approx(0.02703962703962704).epsilon(1e-12));
  CHECK(*mann_whitney_u(b, a).p_value == doctest::Approx(0.02703962703962704).epsilon(1e-12));
  CHECK(t.u_a + t.u_b == 56);
  // 3 + 3 fully separated with ties: the normal approximation said 0.04685, below the floor of
  // 0.1 that any 3 + 3 test has; the exact distribution gives exactly the floor.
  const UTest t2 = mann_whitney_u(std::vector<double>{1, 1, 1}, std::vector<double>{2, 2, 2});
  CHECK(t2.method == UMethod::exact_ties);
  CHECK(*t2.p_value == doctest::Approx(0.1).epsilon(1e-12));
  CHECK(to_string(UMethod::exact_ties) == "exact with ties");
}

TEST_CASE("stats: Mann-Whitney with ties and more than 40 values uses the corrected normal approximation") {
  // docs/statistics.md's formula (scipy's method='asymptotic', use_continuity=True) for these 21 + 21.
  std::vector<double> a, b;
  for (int i = 0; i < 21; ++i) {
    a.push_back(i % 7);
    b.push_back(i % 7 + (i % 3 == 0 ? 1 : 0));
  }
  const UTest t = mann_whitney_u(a, b);
  CHECK(t.method == UMethod::asymptotic);
  REQUIRE(t.p_value);
  CHECK(*t.p_value == doctest::Approx(0.6294677168245618).epsilon(1e-12));
}

TEST_CASE("stats: the permutation distribution with ties by hand") {
  // Values 1 1 2 2 (midranks 1.5 1.5 3.5 3.5, doubled 3 3 7 7), A takes two: rank sums (doubled)
  // 6 (1 way), 10 (4 ways), 14 (1 way) of C(4, 2) = 6.
  const std::vector<std::size_t> w{3, 3, 7, 7};
  CHECK(u_exact_ties_p(w, 2, 6) == doctest::Approx(2.0 / 6));
  CHECK(u_exact_ties_p(w, 2, 14) == doctest::Approx(2.0 / 6));
  CHECK(u_exact_ties_p(w, 2, 10) == 1.0);
  CHECK_THROWS_AS(u_exact_ties_p(w, 0, 0), abtrack::Error);
  CHECK_THROWS_AS(u_exact_ties_p(w, 4, 20), abtrack::Error);
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
