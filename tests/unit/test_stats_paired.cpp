// The paired analysis of interleaved rounds (stats/paired.hpp): the series of per-round
// contrasts, the basis chosen from the variance components, the intervals by hand, the exact
// change, and the sequential (anytime-valid) interval.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "stats/compare.hpp"
#include "stats/paired.hpp"
#include "stats/student_t.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

namespace {

bool has_note(const Comparison& c, const std::string& text) {
  return std::any_of(c.notes.begin(), c.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// Round i: A = level_i * spread, B = level_i * ratio_i * spread (the same within-round pattern).
std::vector<RoundPair> rounds_with(const std::vector<double>& levels, const std::vector<double>& ratios,
                                   const std::vector<double>& spread = {0.99, 1.0, 1.01}) {
  std::vector<RoundPair> rounds;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    RoundPair r;
    for (double f : spread) {
      r.a.push_back(levels[i] * f);
      r.b.push_back(levels[i] * ratios[i] * f);
    }
    rounds.push_back(r);
  }
  return rounds;
}

double mean_log(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += std::log(v);
  return s / static_cast<double>(x.size());
}

}  // namespace

TEST_CASE("stats: Student's t CDF and quantile") {
  // scipy.stats.t.cdf / t.ppf
  CHECK(student_t_cdf(2.0, 1) == doctest::Approx(0.8524163823495667).epsilon(1e-12));
  CHECK(student_t_cdf(-1.5, 3) == doctest::Approx(0.11529193262241141).epsilon(1e-12));
  CHECK(student_t_cdf(0.0, 7) == doctest::Approx(0.5));
  CHECK(student_t_quantile(0.975, 2) == doctest::Approx(4.302652729911275).epsilon(1e-10));
  CHECK(student_t_quantile(0.975, 9) == doctest::Approx(2.2621571627409915).epsilon(1e-10));
  CHECK(student_t_quantile(0.025, 4) == doctest::Approx(-2.7764451051977996).epsilon(1e-10));
  CHECK(student_t_quantile(0.975, std::numeric_limits<double>::infinity()) == doctest::Approx(1.959963984540054));
  CHECK_THROWS_AS(student_t_quantile(1.0, 3), abtrack::Error);
  CHECK_THROWS_AS(student_t_cdf(1.0, 0), abtrack::Error);
}

TEST_CASE("stats: round_series takes mean log samples and the pooled within-invocation variance") {
  const std::vector<std::vector<std::vector<double>>> rounds{{{1, 2}, {4, 4, 4}}, {{2, 2}, {3, 6}}};
  const double w[] = {-1, 1};
  const std::string names[] = {"A", "B"};
  const RoundSeries s = round_series(rounds, w, names);
  REQUIRE(s.values.size() == 2);
  CHECK(s.values[0] == doctest::Approx(std::log(4) - 0.5 * std::log(2)));
  CHECK(s.values[1] == doctest::Approx(0.5 * std::log(18) - std::log(2)));
  CHECK(s.within_df == 1 + 2 + 1 + 1);
  const double ss = 2 * std::pow(0.5 * std::log(2), 2) + 2 * std::pow(0.5 * std::log(2), 2);
  CHECK(s.within_var == doctest::Approx(ss / 5));
  CHECK(s.within_coef == doctest::Approx(((0.5 + 1.0 / 3) + (0.5 + 0.5)) / 2));
  CHECK(s.between_coef == 2);
  CHECK_THROWS_WITH_AS(round_series({{{1, 0}, {1}}}, w, names), doctest::Contains("round 1: A: sample 2 is 0"),
                       abtrack::Error);
}

TEST_CASE("stats: invocations that agree let every sample count (basis samples)") {
  // Each round's B is 2% above A with the same within-round pattern: the contrasts vary far less
  // than the samples predict, so the interval uses the within-invocation variance.
  const std::vector<double> ratios{1.021, 1.019, 1.020, 1.0205};
  const auto rounds = rounds_with({100, 130, 90, 110}, ratios, {0.995, 1.0, 1.005, 0.998, 1.002});
  const Comparison c = compare_paired(rounds);
  CHECK(c.analysis == "paired");
  CHECK(c.basis == "samples");
  CHECK(c.pairs == 4);
  std::vector<double> d;
  for (const auto& r : rounds) d.push_back(mean_log(r.b) - mean_log(r.a));
  double mean = 0;
  for (double x : d) mean += x / 4;
  CHECK(c.delta_pct == doctest::Approx(std::expm1(mean) * 100));
  // Var = within_coef * sigma_w^2 (larger than the contrasts' own), t with min(2 * 3, 32) = 6 df.
  double ss = 0;
  for (const auto& r : rounds)
    for (const auto* arm : {&r.a, &r.b}) {
      const double m = mean_log(*arm);
      for (double v : *arm) ss += (std::log(v) - m) * (std::log(v) - m);
    }
  const double sw2 = ss / 32, var = sw2 * (2.0 / 5);
  CHECK(c.df == 6);
  const double half = 2.4469118487916806 * std::sqrt(var / 4);  // scipy.stats.t.ppf(0.975, 6)
  CHECK(c.delta_ci_pct.lo == doctest::Approx(std::expm1(mean - half) * 100));
  CHECK(c.delta_ci_pct.hi == doctest::Approx(std::expm1(mean + half) * 100));
  CHECK(c.sigma_within_pct == doctest::Approx(std::sqrt(sw2) * 100));
  CHECK(c.sigma_between_pct == 0);
  CHECK(c.verdict == Verdict::worse);
  CHECK(has_note(c, "the invocations agree"));
}

TEST_CASE("stats: invocations that differ make the round the unit (basis rounds), and 3 rounds can decide") {
  // Three rounds, B 40% slower, each invocation with its own offset far above the within noise.
  std::vector<RoundPair> rounds{{{100, 100.5, 99.5}, {141, 141.7, 140.3}},
                                {{104, 104.5, 103.5}, {143, 143.7, 142.3}},
                                {{97, 97.5, 96.5}, {139, 139.7, 138.3}}};
  const Comparison c = compare_paired(rounds);
  CHECK(c.basis == "rounds");
  CHECK(c.df == 2);
  std::vector<double> d;
  for (const auto& r : rounds) d.push_back(mean_log(r.b) - mean_log(r.a));
  const double mean = (d[0] + d[1] + d[2]) / 3;
  double s2 = 0;
  for (double x : d) s2 += (x - mean) * (x - mean) / 2;
  const double half = 4.302652729911275 * std::sqrt(s2 / 3);
  CHECK(c.delta_ci_pct.lo == doctest::Approx(std::expm1(mean - half) * 100));
  const double t = mean / std::sqrt(s2 / 3);
  CHECK(*c.p_value == doctest::Approx(2 * (1 - student_t_cdf(t, 2))));
  CHECK(c.verdict == Verdict::worse);
  CHECK(c.sigma_between_pct > 1);
  CHECK(has_note(c, "the invocations differ"));
  CompareOptions higher;
  higher.better = Better::higher;
  CHECK(compare_paired(rounds, higher).verdict == Verdict::better);
}

TEST_CASE("stats: pairing removes what the rounds share") {
  // Every round 5% slower than the one before (drift); B 2% slower than A in each round.
  std::vector<double> levels, ratios;
  for (int i = 0; i < 12; ++i) {
    levels.push_back(100 * (1 + 0.05 * i));
    ratios.push_back(1.02 + 0.001 * ((i * 7) % 5 - 2));
  }
  const auto rounds = rounds_with(levels, ratios);
  const Comparison paired = compare_paired(rounds);
  CHECK(paired.verdict == Verdict::worse);
  CHECK(paired.basis == "samples");
  CHECK(paired.delta_ci_pct.lo > 1.4);
  CHECK(paired.delta_ci_pct.hi < 2.6);
  std::vector<double> a, b;
  for (const RoundPair& r : rounds) {
    a.insert(a.end(), r.a.begin(), r.a.end());
    b.insert(b.end(), r.b.begin(), r.b.end());
  }
  CHECK(compare(a, b).verdict == Verdict::same);  // pooled, the drift swamps the 2%
}

TEST_CASE("stats: the exact change needs every sample of each arm to be one value") {
  const Comparison exact = compare_paired(rounds_with({100, 100, 100}, {1.1, 1.1, 1.1}, {1.0, 1.0}));
  CHECK(exact.exact);
  CHECK_FALSE(exact.p_value);
  CHECK(exact.delta_pct == doctest::Approx(10));
  CHECK(exact.verdict == Verdict::worse);
  CHECK(verdict_text(exact) == "worse (exact)");
  std::vector<Comparison> family{exact};
  adjust_family(family);
  CHECK(family[0].verdict == Verdict::worse);
  CHECK(family[0].family_size == 0);
  // Integer-rounded noisy samples whose per-round medians tie (100 and 101 in both rounds): not
  // exact, and 2 rounds cannot show a 1% change is real.
  std::vector<RoundPair> tied{{{100, 101, 100, 99, 100}, {101, 101, 102, 100, 101}},
                              {{100, 100, 101, 100, 99}, {101, 100, 100, 102, 101}}};
  const Comparison c = compare_paired(tied);
  CHECK_FALSE(c.exact);
  CHECK(c.verdict != Verdict::worse);
  CHECK(c.verdict != Verdict::better);
  CHECK(c.basis == "rounds");
}

TEST_CASE("stats: one round is inconclusive; equal contrasts with no within noise are not a certainty") {
  const Comparison one = compare_paired(rounds_with({100}, {1.5}));
  CHECK(one.verdict == Verdict::inconclusive);
  CHECK_FALSE(one.p_value);
  CHECK_FALSE(one.delta_ci_pct.bounded());
  CHECK(has_note(one, "1 round cannot tell"));
  // One sample per invocation, the same ratio in every round, the levels differing: nothing
  // measures the noise, so no verdict rather than a certain one.
  const Comparison flat = compare_paired(rounds_with({100, 120, 90}, {1.01, 1.01, 1.01}, {1.0}));
  CHECK_FALSE(flat.exact);
  CHECK(flat.verdict == Verdict::inconclusive);
  std::vector<Comparison> family{flat};
  adjust_family(family);
  CHECK(family[0].verdict == Verdict::inconclusive);
}

TEST_CASE("stats: the sequential interval is the anytime-valid t confidence sequence") {
  // The boundary solves BF(t*) = 1 / alpha, and is wider than the fixed t interval.
  for (std::size_t n : {3u, 5u, 10u, 40u}) {
    const double t = sequential_t_boundary(n, 0.05);
    if (!std::isfinite(t)) continue;
    CHECK(sequential_bayes_factor(t, n) == doctest::Approx(20).epsilon(1e-9));
    CHECK(t > student_t_quantile(0.975, static_cast<double>(n - 1)));
  }
  CHECK_FALSE(std::isfinite(sequential_t_boundary(2, 0.05)));
  CHECK(std::isfinite(sequential_t_boundary(3, 0.05)));           // g = 10: from 3 rounds
  CHECK_FALSE(std::isfinite(sequential_t_boundary(4, 0.05, 1)));  // g = 1: from 5
  CHECK(std::isfinite(sequential_t_boundary(5, 0.05, 1)));
  const auto rounds = rounds_with({100, 103, 98, 101, 99}, {1.4, 1.41, 1.39, 1.405, 1.395}, {1.0, 1.001});
  CompareOptions seq;
  seq.sequential = true;
  const Comparison c = compare_paired(rounds, seq);
  CHECK(c.basis == "sequential");
  CHECK(c.verdict == Verdict::worse);
  const Comparison fixed = compare_paired(rounds);
  CHECK(c.delta_ci_pct.lo < fixed.delta_ci_pct.lo);
  CHECK(*c.p_value >= *fixed.p_value);
}

TEST_CASE("stats: however clear the rounds, the sequential p cannot go below A^-((n-1)/2)") {
  // docs/statistics.md, "How few rounds can decide": 1/31 after 3 rounds, 1/262 after 4 (g = 10),
  // so Holm over 6 comparisons decides none after 3 rounds (0.19) and can after 4 (0.023).
  CHECK(1 / sequential_bayes_factor(1e9, 3) == doctest::Approx(1.0 / 31).epsilon(1e-6));
  CHECK(1 / sequential_bayes_factor(1e9, 4) == doctest::Approx(1 / std::pow(41.0, 1.5)).epsilon(1e-6));
  CHECK(6 / sequential_bayes_factor(1e9, 3) > 0.05);
  CHECK(6 / sequential_bayes_factor(1e9, 4) < 0.05);
  CHECK(2 / sequential_bayes_factor(1e9, 3) > 0.05);
}

TEST_CASE("stats: compare_paired rejects what it cannot pair") {
  CHECK_THROWS_WITH_AS(compare_paired({}), doctest::Contains("no rounds"), abtrack::Error);
  CHECK_THROWS_WITH_AS(compare_paired({{{1, 2}, {}}}), doctest::Contains("round 1: B (variant): no samples"),
                       abtrack::Error);
  CHECK_THROWS_WITH_AS(compare_paired({{{1, 2}, {1, 2}}, {{1, 0}, {1, 2}}}),
                       doctest::Contains("round 2: A (baseline): sample 2 is 0"), abtrack::Error);
  CHECK_THROWS_AS(compare_paired({{{1, -2}, {1, 2}}}), abtrack::Error);
  CHECK_THROWS_AS(compare_paired({{{1, std::numeric_limits<double>::infinity()}, {1, 2}}}), abtrack::Error);
  CompareOptions bad;
  bad.alpha = 1.5;
  CHECK_THROWS_WITH_AS(compare_paired({{{1, 2}, {1, 2}}}, bad), doctest::Contains("alpha"), abtrack::Error);
}

TEST_CASE("stats: over 6 comparisons rounds: auto cannot decide before round 4; a fixed design can by 3") {
  // Holm's first step over 6 comparisons asks alpha / 6 (docs/statistics.md, "Expected rounds").
  const double alpha = 0.05 / 6;
  CHECK_FALSE(std::isfinite(sequential_t_boundary(3, alpha)));  // however large the change
  CHECK(std::isfinite(sequential_t_boundary(4, alpha)));
  // A 40% change with 0.3% per-round noise, as in the FlashMLA comparison.
  const double mean = std::log(1.4), sd = 0.003, delta = std::log1p(0.005);
  CHECK(expected_rounds(mean, sd, delta, alpha, true, 20) == std::optional<std::size_t>(4));
  const auto fixed = expected_rounds(mean, sd, delta, alpha, false, 20);
  REQUIRE(fixed);
  CHECK(*fixed <= 3);
}
