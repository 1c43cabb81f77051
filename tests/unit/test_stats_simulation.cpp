// Fixed-seed simulations of the whole method: false positives, power, coverage, Holm.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "oracle/stats_support.hpp"
#include "stats/compare.hpp"
#include "stats/quantile.hpp"

using namespace abtrack::stats;

TEST_CASE("stats: A/A comparisons are rarely significant (at most alpha)") {
  testing::Rng rng(1);
  const int trials = 2000;
  int significant = 0, decided = 0;
  for (int t = 0; t < trials; ++t) {
    const Comparison c = compare(rng.times(20, 100, 0.01), rng.times(20, 100, 0.01));
    if (c.p_value && *c.p_value < 0.05) ++significant;
    if (c.verdict == Verdict::better || c.verdict == Verdict::worse) ++decided;
  }
  MESSAGE("A/A: p < 0.05 in " << significant << " of " << trials << ", better/worse in " << decided);
  // The exact test's size is <= alpha; allow ~2 binomial standard errors of sampling noise.
  CHECK(significant <= 0.05 * trials + 2 * 10);
  CHECK(decided <= 0.05 * trials);
}

TEST_CASE("stats: A/A with ties (exact test with ties at 15 + 15) stays at or below alpha") {
  testing::Rng rng(5);
  const int trials = 1000;
  int decided = 0, significant = 0;
  for (int t = 0; t < trials; ++t) {
    auto a = rng.times(15, 100, 0.01), b = rng.times(15, 100, 0.01);
    for (double& x : a) x = std::round(x * 2) / 2;  // 0.5 resolution: many ties
    for (double& x : b) x = std::round(x * 2) / 2;
    const Comparison c = compare(a, b);
    if (c.p_value && *c.p_value < 0.05) ++significant;
    if (c.verdict == Verdict::better || c.verdict == Verdict::worse) ++decided;
  }
  MESSAGE("A/A ties: p < 0.05 in " << significant << " of " << trials << ", better/worse in " << decided);
  CHECK(significant <= 0.05 * trials + 2 * 7);
  CHECK(decided <= 0.05 * trials);
}

TEST_CASE("stats: a 3% speed-up under 1% noise is found, and the CI covers it") {
  testing::Rng rng(2);
  const int trials = 1000;
  int found = 0, covered = 0, median_covered = 0;
  for (int t = 0; t < trials; ++t) {
    const auto a = rng.times(20, 100, 0.01), b = rng.times(20, 97, 0.01);
    const Comparison c = compare(a, b);
    if (c.verdict == Verdict::better) ++found;
    if (c.delta_ci_pct.contains(-3.0)) ++covered;
    if (c.ci_a.contains(100.0)) ++median_covered;
  }
  MESSAGE("3% shift: better in " << found << ", CI covers -3% in " << covered << ", median CI covers in "
                                 << median_covered << " of " << trials);
  CHECK(found >= 0.95 * trials);
  CHECK(covered >= 0.90 * trials);
  CHECK(median_covered >= 0.93 * trials);  // nominal 95.9% at n = 20
  // The same change measured as throughput (higher is better) is `better` too.
  CompareOptions higher;
  higher.better = Better::higher;
  const Comparison tput = compare(rng.times(20, 97, 0.01), rng.times(20, 100, 0.01), higher);
  CHECK(tput.verdict == Verdict::better);
}

TEST_CASE("stats: Holm keeps the family-wise rate at or below alpha over 12 identical cells") {
  testing::Rng rng(3);
  const int experiments = 1000;
  int any_raw = 0, any_adjusted = 0, any_verdict = 0;
  for (int e = 0; e < experiments; ++e) {
    std::vector<Comparison> family;
    for (int cell = 0; cell < 12; ++cell) family.push_back(compare(rng.times(20, 100, 0.01), rng.times(20, 100, 0.01)));
    bool raw = false, adjusted = false, verdict = false;
    for (const Comparison& c : family) raw = raw || (*c.p_value < 0.05);
    adjust_family(family);
    for (const Comparison& c : family) {
      adjusted = adjusted || (*c.p_adjusted < 0.05);
      verdict = verdict || c.verdict == Verdict::better || c.verdict == Verdict::worse;
    }
    any_raw += raw;
    any_adjusted += adjusted;
    any_verdict += verdict;
  }
  MESSAGE("12 identical cells: some p < 0.05 in " << any_raw << " of " << experiments << " experiments; after Holm "
                                                  << any_adjusted << "; better/worse verdicts in " << any_verdict);
  CHECK(any_raw > 0.3 * experiments);  // without the correction: about 1 - 0.95^12 = 46%
  // Holm's family-wise rate is <= alpha; allow ~2 binomial standard errors of sampling noise.
  CHECK(any_adjusted <= 0.05 * experiments + 2 * 7);
  CHECK(any_verdict <= 0.05 * experiments);
}
