#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "oracle/stats_support.hpp"
#include "stats/hodges_lehmann.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

namespace {
std::vector<double> all_differences(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d;
  for (double x : a)
    for (double y : b) d.push_back(std::log(y) - std::log(x));
  std::sort(d.begin(), d.end());
  return d;
}
}  // namespace

TEST_CASE("stats: k-th log difference equals brute force") {
  testing::Rng rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const auto n1 = static_cast<std::size_t>(rng.between(1, 25));
    const auto n2 = static_cast<std::size_t>(rng.between(1, 25));
    std::vector<double> a = rng.times(n1, 10, 0.05), b = rng.times(n2, 9.5, 0.05);
    if (trial % 3 == 0) {  // ties and repeated differences
      for (double& x : a) x = std::round(x * 4) / 4;
      for (double& x : b) x = std::round(x * 4) / 4;
    }
    const std::vector<double> d = all_differences(a, b);
    for (std::size_t k = 1; k <= d.size(); k += 1 + d.size() / 17) {
      CAPTURE(trial);
      CAPTURE(k);
      CHECK(kth_log_difference(a, b, k) == d[k - 1]);
    }
    CHECK(kth_log_difference(a, b, d.size()) == d.back());
  }
  CHECK_THROWS_AS(kth_log_difference(std::vector<double>{1}, std::vector<double>{2}, 2), abtrack::Error);
}

// hodges_lehmann_log sorts the differences when there are at most 65,536 of them and bisects
// past that; kth_log_difference always bisects: both must give the same doubles, bit for bit.
TEST_CASE("stats: the shift and interval are the same doubles whether the differences are sorted or bisected") {
  testing::Rng rng(11);
  const std::pair<std::size_t, std::size_t> sizes[] = {{1, 1},     {2, 3},     {20, 20},  {7, 31},
                                                       {256, 256}, {257, 256}, {300, 250}};
  for (const auto& size : sizes) {
    const std::size_t n1 = size.first,
                      n2 = size.second;  // CAPTURE's lambda cannot name a structured binding in clang 14
    for (int ties = 0; ties < 2; ++ties) {
      std::vector<double> a = rng.times(n1, 10, 0.05), b = rng.times(n2, 9.5, 0.05);
      if (ties)
        for (auto* v : {&a, &b})
          for (double& x : *v) x = std::round(x * 2) / 2;  // many zero and repeated differences
      CAPTURE(n1);
      CAPTURE(n2);
      CAPTURE(ties);
      const std::uint64_t m = std::uint64_t{n1} * n2;
      const LogShift s = hodges_lehmann_log(a, b);
      const double mid = m % 2 ? kth_log_difference(a, b, (m + 1) / 2)
                               : (kth_log_difference(a, b, m / 2) + kth_log_difference(a, b, m / 2 + 1)) / 2 + 0.0;
      CHECK(std::bit_cast<std::uint64_t>(s.shift) == std::bit_cast<std::uint64_t>(mid));
      const double c =
          std::round(static_cast<double>(m) / 2 - 1.96 * std::sqrt(static_cast<double>(m) * (n1 + n2 + 1) / 12));
      if (c >= 1) {
        const auto k = static_cast<std::uint64_t>(c);
        CHECK(std::bit_cast<std::uint64_t>(s.ci.lo) == std::bit_cast<std::uint64_t>(kth_log_difference(a, b, k) + 0.0));
        CHECK(std::bit_cast<std::uint64_t>(s.ci.hi) ==
              std::bit_cast<std::uint64_t>(kth_log_difference(a, b, m + 1 - k) + 0.0));
      } else {
        CHECK_FALSE(s.ci.bounded());
      }
    }
  }
}

// Reference: brute force in numpy (tests/unit/oracle/stats_oracle.py, case "hl").
TEST_CASE("stats: Hodges-Lehmann shift and Moses interval") {
  const std::vector<double> a{10.1, 10.4, 9.8, 10.0, 10.7, 9.9, 10.2, 10.3};
  const std::vector<double> b{9.7, 9.6, 10.05, 9.5, 9.85, 9.55, 9.65, 9.45};
  const LogShift s = hodges_lehmann_log(a, b);
  CHECK(s.shift == doctest::Approx(-0.05051708007715572).epsilon(1e-12));
  CHECK(s.ci.lo == doctest::Approx(-0.08004270767353638).epsilon(1e-12));
  CHECK(s.ci.hi == doctest::Approx(-0.024571260730505085).epsilon(1e-12));
  CHECK(s.delta_pct() == doctest::Approx((std::exp(-0.05051708007715572) - 1) * 100));
  CHECK(s.delta_ci_pct().lo == doctest::Approx((std::exp(-0.08004270767353638) - 1) * 100));
  const LogShift s90 = hodges_lehmann_log(a, b, 0.9);
  CHECK(s90.ci.lo == doctest::Approx(-0.07484789079643273).epsilon(1e-12));
  CHECK(s90.ci.hi == doctest::Approx(-0.02584123118388737).epsilon(1e-12));

  std::vector<double> x, y;
  for (int i = 1; i <= 10; ++i) {
    x.push_back(i);
    y.push_back(i + 10);
  }
  const LogShift t = hodges_lehmann_log(x, y);
  CHECK(t.shift == doctest::Approx(1.0355366460046596).epsilon(1e-12));
  CHECK(t.ci.lo == doctest::Approx(0.635988766719997).epsilon(1e-12));
  CHECK(t.ci.hi == doctest::Approx(1.7047480922384253).epsilon(1e-12));
}

TEST_CASE("stats: Moses interval is unbounded when C < 1") {
  // 3 + 3: C = round(4.5 - 1.96 sqrt(9 * 7 / 12)) = 0.
  const LogShift s = hodges_lehmann_log(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
  CHECK_FALSE(s.ci.bounded());
  CHECK_FALSE(s.delta_ci_pct().bounded());
  // 4 + 4: C = 1, the full range of differences.
  const LogShift t = hodges_lehmann_log(std::vector<double>{1, 2, 3, 4}, std::vector<double>{5, 6, 7, 8});
  CHECK(t.ci.lo == doctest::Approx(std::log(5.0 / 4)));
  CHECK(t.ci.hi == doctest::Approx(std::log(8.0)));
}

TEST_CASE("stats: identical arms have zero shift, not -0") {
  const std::vector<double> a{2, 2, 2, 2, 2, 2};
  const LogShift s = hodges_lehmann_log(a, a);
  CHECK(s.shift == 0);
  CHECK_FALSE(std::signbit(s.shift));
  CHECK(s.ci.lo == 0);
  CHECK(s.ci.hi == 0);
  CHECK(s.delta_pct() == 0);
}

TEST_CASE("stats: log effects need positive samples") {
  const std::vector<double> ok{1, 2, 3};
  for (double bad : {0.0, -1.5}) {
    const std::vector<double> b{1, bad, 3};
    try {
      hodges_lehmann_log(ok, b);
      FAIL("no error");
    } catch (const abtrack::Error& e) {
      CHECK(e.code() == abtrack::Exit::usage);
      CHECK(std::string(e.what()).find("must be > 0") != std::string::npos);
      CHECK(std::string(e.what()).find("sample 2") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(hodges_lehmann_log(ok, std::vector<double>{}), abtrack::Error);
  CHECK_THROWS_AS(hodges_lehmann_log(ok, ok, 1.0), abtrack::Error);
}
