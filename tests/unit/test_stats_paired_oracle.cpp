// Checks stats/paired.* against scipy.stats.wilcoxon (exact and approximate) and a brute-force
// sign-flip enumeration at test time (tests/unit/oracle/paired_oracle.py). Without python3 +
// scipy the comparison is skipped with a message, except under CI=true, where it is a failure.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "oracle/stats_support.hpp"
#include "stats/paired.hpp"

using namespace abtrack::stats;

namespace {

using testing::close;
using testing::list;
using testing::Oracle;
using testing::Row;

// n differences around `center` with relative spread 1 (distinct with probability 1).
std::vector<double> differences(testing::Rng& rng, std::size_t n, double center) {
  std::vector<double> d(n);
  for (double& x : d) x = center + rng.normal();
  return d;
}

void build_cases(Oracle& o) {
  testing::Rng rng(24);

  // Exact, no ties, no zeros: scipy's method='exact', n = 1..50.
  std::vector<std::size_t> sizes{1, 2, 3, 5, 6, 7, 10, 15, 20, 25, 26, 33, 49, 50};
  for (int i = 0; i < 12; ++i) sizes.push_back(static_cast<std::size_t>(rng.between(1, 50)));
  for (std::size_t n : sizes) {
    const auto d = differences(rng, n, 0.6 * rng.normal());
    const SignedRankTest t = wilcoxon_signed_rank(d);
    REQUIRE(t.method == UMethod::exact);
    o.add(fmt::format("wilcoxon exact n={}", n), "wilcoxon exact " + list(d), [t](const Row& r) {
      CHECK(std::min(t.w_plus, t.w_minus) == r.at(0));
      CHECK(close(*t.p_value, r.at(1), 1e-9));
    });
  }
  // Normal approximation: more than 50 non-zero differences, with and without ties and zeros
  // (scipy's method='approx', correction=True drops zeros the same way).
  for (int i = 0; i < 20; ++i) {
    const auto n = static_cast<std::size_t>(rng.between(51, 150));
    auto d = differences(rng, n, 0.3 * rng.normal());
    if (i % 2 == 0) {
      for (double& x : d) x = std::round(x * 4) / 4;  // ties, and some zeros
    }
    const SignedRankTest t = wilcoxon_signed_rank(d);
    if (t.method != UMethod::asymptotic) continue;  // rounding left 50 or fewer non-zero
    o.add(fmt::format("wilcoxon approx n={} zeros={} ties={}", t.n, t.zeros, t.ties), "wilcoxon approx " + list(d),
          [t](const Row& r) {
            CHECK(std::min(t.w_plus, t.w_minus) == r.at(0));
            CHECK(close(*t.p_value, r.at(1), 1e-9));
          });
  }
  // Exact with ties and zeros: every sign pattern enumerated (scipy's exact method has no ties).
  for (int i = 0; i < 40; ++i) {
    const auto n = static_cast<std::size_t>(rng.between(1, 14));
    auto d = differences(rng, n, 0.5 * rng.normal());
    const double grid = i % 2 == 0 ? 1 : 2;
    for (double& x : d) x = std::round(x * grid) / grid;
    if (std::all_of(d.begin(), d.end(), [](double x) { return x == 0; })) d[0] = 1;
    const SignedRankTest t = wilcoxon_signed_rank(d);
    o.add(fmt::format("signflip n={} ties={}", n, t.ties), "signflip " + list(d),
          [t](const Row& r) { CHECK(close(*t.p_value, r.at(0), 1e-12)); });
  }
  // compare_paired end to end: numpy medians per round, the binomial median CI, scipy's p.
  for (int i = 0; i < 25; ++i) {
    const auto n_rounds = static_cast<std::size_t>(i < 3 ? i + 1 : rng.between(1, 60));
    const double shift = 0.01 * rng.normal(), level_step = 0.02 * rng.uniform();
    const double conf = i % 4 == 0 ? 0.9 : 0.95;
    std::vector<RoundPair> rounds(n_rounds);
    std::string line = fmt::format("paired {} {}", conf, n_rounds);
    for (std::size_t k = 0; k < n_rounds; ++k) {
      const double level = 100 * (1 + level_step * static_cast<double>(k));
      rounds[k].a = rng.times(static_cast<std::size_t>(rng.between(1, 12)), level, 0.01);
      rounds[k].b = rng.times(static_cast<std::size_t>(rng.between(1, 12)), level * (1 + shift), 0.01);
      line += " " + list(rounds[k].a) + " " + list(rounds[k].b);
    }
    CompareOptions options;
    options.alpha = 1 - conf;
    const Comparison c = compare_paired(rounds, options);
    REQUIRE_FALSE(c.exact);
    o.add(fmt::format("paired rounds={} conf={}", n_rounds, conf), line, [c](const Row& r) {
      CHECK(close(c.delta_pct, r.at(0), 1e-9));
      CHECK(close(c.delta_ci_pct.lo, r.at(1), 1e-9));
      CHECK(close(c.delta_ci_pct.hi, r.at(2), 1e-9));
      CHECK(close(*c.p_value, r.at(3), 1e-9));
    });
  }
}

}  // namespace

TEST_CASE("stats: paired analysis agrees with scipy.stats.wilcoxon (python3-scipy, at test time)") {
  Oracle o;
  build_cases(o);
  testing::check_with_scipy(o, "paired_oracle.py", "scipy and the sign-flip enumeration");
}
