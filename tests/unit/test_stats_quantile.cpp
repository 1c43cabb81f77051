#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "stats/quantile.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

TEST_CASE("stats: R8 quantiles and the median") {
  const std::vector<double> x{4, 1, 3, 2};
  CHECK(median(x) == doctest::Approx(2.5));
  CHECK(median(std::vector<double>{5, 1, 3}) == 3);
  CHECK(median(std::vector<double>{7}) == 7);
  // R8: h = 1/3 + q(n + 1/3); numpy.quantile(..., method='median_unbiased') agrees.
  CHECK(quantile(std::vector<double>{1, 2, 3, 4, 10}, 0.25) == doctest::Approx(1.6666666666666667));
  CHECK(quantile(x, 0) == 1);
  CHECK(quantile(x, 1) == 4);
  CHECK(quantile(x, 0.01) == 1);  // h < 1 clamps to x(1)
  CHECK(quantile(x, 0.99) == 4);  // h > n clamps to x(n)
}

TEST_CASE("stats: median CI positions match statistics.md's worked values") {
  auto p6 = median_ci_positions(6);
  CHECK(p6.lo == 1);
  CHECK(p6.hi == 6);
  CHECK(p6.coverage == doctest::Approx(0.96875));
  auto p10 = median_ci_positions(10);
  CHECK(p10.lo == 2);
  CHECK(p10.hi == 9);
  CHECK(p10.coverage == doctest::Approx(0.978515625));
  auto p20 = median_ci_positions(20);
  CHECK(p20.lo == 6);
  CHECK(p20.hi == 15);
  CHECK(p20.coverage == doctest::Approx(0.9586105346679688));
  // Odd n: two modes, start at the left one (scipy.stats.binom via the oracle: n=7 -> [x1, x7]).
  auto p7 = median_ci_positions(7);
  CHECK(p7.lo == 1);
  CHECK(p7.hi == 7);
  auto p31 = median_ci_positions(31);
  CHECK(p31.lo == 10);
  CHECK(p31.hi == 22);
  auto p100 = median_ci_positions(100);
  CHECK(p100.lo == 40);
  CHECK(p100.hi == 60);
  CHECK(p100.coverage == doctest::Approx(0.9539559330706572));
  // Large n stays cheap; the interval is symmetric, or one position longer on the left (ties: left).
  auto big = median_ci_positions(1'000'000);
  CHECK(big.bounded());
  CHECK((big.lo + big.hi == 1'000'001 || big.lo + big.hi == 1'000'000));
  CHECK(big.hi - big.lo < 2000);
  CHECK(big.coverage >= 0.95);
}

TEST_CASE("stats: fewer than 6 samples give an unbounded median CI") {
  for (std::size_t n = 1; n <= 5; ++n) {
    CAPTURE(n);
    CHECK_FALSE(median_ci_positions(n).bounded());
    std::vector<double> x(n, 1.0);
    const Interval ci = median_ci(x);
    CHECK_FALSE(ci.bounded());
    CHECK(ci.lo == -std::numeric_limits<double>::infinity());
    CHECK(ci.hi == std::numeric_limits<double>::infinity());
  }
  CHECK(median_ci_positions(6).bounded());
  // A lower confidence needs fewer samples.
  CHECK(median_ci_positions(4, 0.8).bounded());
}

TEST_CASE("stats: median CI picks order statistics of the samples") {
  const std::vector<double> x{10, 3, 8, 1, 7, 2, 9, 4, 6, 5};  // sorted: 1..10
  const Interval ci = median_ci(x);
  CHECK(ci.lo == 2);
  CHECK(ci.hi == 9);
  CHECK(ci.contains(median(x)));
}

TEST_CASE("stats: quantile input errors") {
  const std::vector<double> empty;
  CHECK_THROWS_AS(median(empty), abtrack::Error);
  CHECK_THROWS_AS(median_ci(empty), abtrack::Error);
  CHECK_THROWS_AS(median(std::vector<double>{1, std::nan(""), 3}), abtrack::Error);
  CHECK_THROWS_AS(median(std::vector<double>{1, std::numeric_limits<double>::infinity()}), abtrack::Error);
  CHECK_THROWS_AS(quantile(std::vector<double>{1, 2}, 1.5), abtrack::Error);
  CHECK_THROWS_AS(median_ci_positions(10, 1.0), abtrack::Error);
  CHECK_THROWS_AS(median_ci_positions(0), abtrack::Error);
  try {
    median(std::vector<double>{1, std::nan("")});
    FAIL("no error");
  } catch (const abtrack::Error& e) {
    CHECK(e.code() == abtrack::Exit::usage);
    CHECK(std::string(e.what()).find("sample 2 is nan") != std::string::npos);
  }
}
