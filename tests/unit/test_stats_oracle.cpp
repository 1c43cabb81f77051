// Checks tracker/stats against scipy/numpy at test time (tests/unit/oracle/stats_oracle.py).
// Without python3 + scipy the comparison is skipped with a message, except under CI=true, where
// a missing oracle is a failure (CI installs python3-scipy).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "oracle/stats_support.hpp"
#include "stats/hodges_lehmann.hpp"
#include "stats/holm.hpp"
#include "stats/linear_fit.hpp"
#include "stats/mann_whitney.hpp"
#include "stats/normal.hpp"
#include "stats/quantile.hpp"

using namespace abtrack::stats;

namespace {

using testing::close;
using testing::list;
using testing::Oracle;
using testing::Row;

void build_cases(Oracle& o) {
  testing::Rng rng(2024);

  // Mann-Whitney, exact: no ties, up to 50 per side (including 1 and 50).
  std::vector<std::pair<int, int>> sizes{{1, 1}, {1, 7}, {2, 50}, {3, 3}, {50, 50}, {50, 1}, {7, 33}};
  for (int i = 0; i < 25; ++i) sizes.emplace_back(rng.between(2, 50), rng.between(2, 50));
  for (auto [n1, n2] : sizes) {
    const double shift = 0.4 * rng.normal();
    const auto a = rng.times(n1, 10, 0.1), b = rng.times(n2, 10 * (1 + 0.05 * shift), 0.1);
    const UTest t = mann_whitney_u(a, b);
    REQUIRE(t.method == UMethod::exact);
    o.add(fmt::format("mwu exact {}+{}", n1, n2), "mwu exact " + list(a) + " " + list(b),
          [p = *t.p_value](const Row& r) { CHECK(close(p, r.at(0), 1e-9)); });
  }
  // Mann-Whitney, asymptotic: ties (rounded values), and more than 50 per side without ties.
  for (int i = 0; i < 25; ++i) {
    const int n1 = rng.between(2, 80), n2 = rng.between(2, 80);
    auto a = rng.times(n1, 10, 0.1), b = rng.times(n2, 10.2, 0.1);
    if (i < 18) {
      for (double& x : a) x = std::round(x * 4) / 4;
      for (double& x : b) x = std::round(x * 4) / 4;
    } else {
      a = rng.times(51 + i, 10, 0.1);
    }
    const UTest t = mann_whitney_u(a, b);
    if (t.method != UMethod::asymptotic) continue;  // rounding left no tie: nothing to compare here
    o.add(fmt::format("mwu asymptotic {}+{}", a.size(), b.size()), "mwu asymptotic " + list(a) + " " + list(b),
          [p = *t.p_value](const Row& r) { CHECK(close(p, r.at(0), 1e-9)); });
  }
  // Median CI positions: scipy.stats.binom.
  std::vector<std::pair<std::size_t, double>> ci_cases;
  for (std::size_t n = 1; n <= 120; ++n) ci_cases.emplace_back(n, 0.95);
  for (std::size_t n : {150, 201, 500, 999, 1000, 4000}) ci_cases.emplace_back(n, 0.95);
  for (std::size_t n : {5, 10, 25, 60, 333}) {
    ci_cases.emplace_back(n, 0.9);
    ci_cases.emplace_back(n, 0.99);
  }
  for (auto [n, conf] : ci_cases) {
    const OrderStatisticCi ci = median_ci_positions(n, conf);
    o.add(fmt::format("median ci n={} conf={}", n, conf), fmt::format("medianci {} {}", n, conf), [ci](const Row& r) {
      CHECK(static_cast<double>(ci.lo) == r.at(0));
      CHECK(static_cast<double>(ci.hi) == r.at(1));
      CHECK(close(ci.coverage, r.at(2), 1e-9));
    });
  }
  // R8 quantiles: numpy's 'median_unbiased' method.
  for (int i = 0; i < 20; ++i) {
    const auto x = rng.times(rng.between(1, 40), 5, 0.3);
    const double q = i < 3 ? i * 0.5 : rng.uniform();
    o.add("quantile", fmt::format("quantile {} ", q) + list(x),
          [v = quantile(x, q)](const Row& r) { CHECK(close(v, r.at(0), 1e-12)); });
  }
  // Hodges-Lehmann + Moses: brute force over all differences.
  for (int i = 0; i < 20; ++i) {
    const int n1 = rng.between(1, 30), n2 = rng.between(1, 30);
    auto a = rng.times(n1, 10, 0.05), b = rng.times(n2, 9.7, 0.05);
    if (i % 4 == 0) {
      for (double& x : b) x = std::round(x * 10) / 10;
    }
    const double conf = i % 3 == 0 ? 0.9 : 0.95;
    const LogShift s = hodges_lehmann_log(a, b, conf);
    o.add(fmt::format("hl {}+{}", n1, n2), fmt::format("hl {} ", conf) + list(a) + " " + list(b), [s](const Row& r) {
      CHECK(close(s.shift, r.at(0), 1e-12));
      CHECK(close(s.ci.lo, r.at(1), 1e-12));
      CHECK(close(s.ci.hi, r.at(2), 1e-12));
    });
  }
  // Holm: families with undefined p-values.
  for (int i = 0; i < 10; ++i) {
    std::vector<double> p(static_cast<std::size_t>(rng.between(1, 15)));
    for (double& x : p) x = rng.uniform() < 0.15 ? std::nan("") : std::pow(rng.uniform(), 3);
    o.add("holm", "holm " + list(p), [adj = holm(p)](const Row& r) {
      REQUIRE(r.size() == adj.size());
      for (std::size_t k = 0; k < adj.size(); ++k) {
        if (std::isnan(r[k])) CHECK(std::isnan(adj[k]));
        else CHECK(close(adj[k], r[k], 1e-12));
      }
    });
  }
  // Model fit: scipy.stats.linregress.
  for (int i = 0; i < 8; ++i) {
    const int n = rng.between(3, 20);
    std::vector<double> x(n), y(n);
    for (int k = 0; k < n; ++k) {
      x[k] = rng.between(1, 256);
      y[k] = 18 + 1.05 * x[k] + 10 * rng.normal();
    }
    x[0] = 0;
    x[1] = 300;  // at least 2 distinct values
    const LinearFit f = fit_linear(x, y);
    o.add("linfit", fmt::format("linfit {}", n) + list(x).substr(list(x).find(' ')) + list(y).substr(list(y).find(' ')),
          [f](const Row& r) {
            CHECK(close(f.fixed, r.at(0), 1e-9));
            CHECK(close(f.marginal, r.at(1), 1e-9));
            CHECK(close(*f.se_fixed, r.at(2), 1e-7));
            CHECK(close(*f.se_marginal, r.at(3), 1e-7));
            CHECK(close(f.r_squared, r.at(4), 1e-9));
          });
  }
  // Normal quantile (used for Moses intervals at confidences other than 95%).
  for (double p : {1e-12, 1e-5, 0.001, 0.02425, 0.05, 0.3, 0.5, 0.8, 0.95, 0.975, 0.995, 0.999999}) {
    o.add("normppf", fmt::format("normppf {}", p),
          [z = normal_quantile(p)](const Row& r) { CHECK(close(z, r.at(0), 1e-12)); });
  }
}

}  // namespace

TEST_CASE("stats: scipy oracle agrees (python3-scipy, at test time)") {
  Oracle o;
  build_cases(o);
  testing::check_with_scipy(o, "stats_oracle.py", "scipy");
}

// The exact U distribution with ties against a brute-force permutation test
// (tests/unit/oracle/permutation_oracle.py: pure Python, every assignment enumerated; scipy's
// exact method has no ties). Needs only python3.
TEST_CASE("stats: Mann-Whitney with ties agrees with a brute-force permutation test") {
  if (std::system("python3 -c '' >/dev/null 2>&1") != 0) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL("CI=true but no python3");
    MESSAGE("skipped: no python3");
    return;
  }
  testing::Rng rng(23);
  std::string cases;
  std::vector<double> ps;
  std::vector<std::string> names;
  auto add = [&](const std::vector<double>& a, const std::vector<double>& b) {
    const UTest t = mann_whitney_u(a, b);
    if (!t.p_value) return;  // every value equal: no p
    REQUIRE(t.method == (t.ties ? UMethod::exact_ties : UMethod::exact));
    // The note's floor holds: no p below 2 / C(n1 + n2, n1).
    CHECK(*t.p_value >= min_p_value(a.size(), b.size()) * (1 - 1e-12));
    cases += "mwuperm " + list(a) + " " + list(b) + "\n";
    ps.push_back(*t.p_value);
    names.push_back(fmt::format("{}+{}", a.size(), b.size()));
  };
  add({1, 1, 1}, {2, 2, 2});
  add({1, 1, 2}, {2, 2, 2});
  add({5, 5, 5, 6}, {5, 6, 6, 6, 7});
  add({0, 0, 0, 1}, {0, 2, 3, 3});
  for (int i = 0; i < 60; ++i) {
    const int n1 = rng.between(1, 8), n2 = rng.between(1, 8);
    // Few distinct values: many ties, of uneven sizes (the distribution is then asymmetric).
    const double grid = i % 3 == 0 ? 1 : i % 3 == 1 ? 4 : 10;
    auto a = rng.times(n1, 10, 0.1), b = rng.times(n2, 10.3, 0.1);
    for (double& x : a) x = std::round(x * grid / 10) * 10 / grid;
    for (double& x : b) x = std::round(x * grid / 10) * 10 / grid;
    add(a, b);
  }
  const auto rows = testing::run_oracle("python3", cases, "permutation_oracle.py");
  REQUIRE_MESSAGE(rows, "tests/unit/oracle/permutation_oracle.py failed");
  REQUIRE(rows->size() == ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    CAPTURE(names[i]);
    CAPTURE(i);
    CHECK(close(ps[i], (*rows)[i].at(0), 1e-12));
  }
  MESSAGE(fmt::format("compared {} cases with the permutation test", ps.size()));
}
