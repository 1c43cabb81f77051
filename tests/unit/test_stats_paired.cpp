// The paired analysis of interleaved rounds (stats/paired.hpp): the signed-rank test by hand,
// compare_paired's numbers, verdicts and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "stats/compare.hpp"
#include "stats/paired.hpp"
#include "stats/quantile.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

namespace {

bool has_note(const Comparison& c, const std::string& text) {
  return std::any_of(c.notes.begin(), c.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// `rounds` rounds; round i has A = level_i * {0.99, 1, 1.01} and B = level_i * ratio_i * the same.
std::vector<RoundPair> rounds_with(const std::vector<double>& levels, const std::vector<double>& ratios) {
  std::vector<RoundPair> rounds;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    RoundPair r;
    for (double f : {0.99, 1.0, 1.01}) {
      r.a.push_back(levels[i] * f);
      r.b.push_back(levels[i] * ratios[i] * f);
    }
    rounds.push_back(r);
  }
  return rounds;
}

// Ratios around `center` that differ in every round (so that the change is not exact).
std::vector<double> ratios_around(double center, std::size_t n, double spread) {
  std::vector<double> r;
  for (std::size_t i = 0; i < n; ++i) r.push_back(center * (1 + spread * (static_cast<double>((i * 7) % n) / n - 0.5)));
  return r;
}

}  // namespace

TEST_CASE("stats: the signed-rank test, exact, by hand") {
  // scipy.stats.wilcoxon's documented example (Wilcoxon 1945's data): T = 24, p = 0.041259765625.
  const std::vector<double> d{6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75};
  const SignedRankTest t = wilcoxon_signed_rank(d);
  CHECK(t.method == UMethod::exact);
  CHECK(t.n == 15);
  CHECK(t.w_minus == 24);
  CHECK(t.w_plus == 96);
  REQUIRE(t.p_value);
  CHECK(*t.p_value == doctest::Approx(0.041259765625).epsilon(1e-12));
  // All of one sign: the smallest p there is, 2 / 2^n.
  CHECK(*wilcoxon_signed_rank(std::vector<double>{1, 2, 3, 4, 5, 6}).p_value == doctest::Approx(2.0 / 64));
  CHECK(*wilcoxon_signed_rank(std::vector<double>{-1, -2, -3, -4, -5}).p_value == doctest::Approx(2.0 / 32));
  // One difference can never be significant: p = 1.
  CHECK(*wilcoxon_signed_rank(std::vector<double>{0.1}).p_value == 1);
  // Perfectly balanced: W+ at the centre, p = 1.
  CHECK(*wilcoxon_signed_rank(std::vector<double>{1, -2, -3, 4}).p_value == 1);
}

TEST_CASE("stats: the signed-rank test drops zeros and is exact with ties") {
  // Zeros are dropped (zero_method='wilcox'): the same as the six non-zero differences.
  const SignedRankTest z = wilcoxon_signed_rank(std::vector<double>{0, 1, 0, 2, 3, 4, 5, 6});
  CHECK(z.zeros == 2);
  CHECK(z.n == 6);
  CHECK(*z.p_value == doctest::Approx(2.0 / 64));
  // Tied |d| share their midrank; the p counts the 2^n sign patterns: [1, 1, 2] has doubled ranks
  // 3, 3, 6; W+ at its maximum is 1 of 8 patterns (p = 0.25); [1, -1, 2] has 3 of 8 at or above.
  const SignedRankTest t = wilcoxon_signed_rank(std::vector<double>{1, 1, 2});
  CHECK(t.method == UMethod::exact_ties);
  CHECK(t.ties);
  CHECK(t.w_plus == 6);
  CHECK(*t.p_value == doctest::Approx(0.25));
  CHECK(*wilcoxon_signed_rank(std::vector<double>{1, -1, 2}).p_value == doctest::Approx(0.75));
  // Six equal differences: still exactly 2 / 2^6, never below the floor (the normal approximation
  // would say 0.020).
  CHECK(*wilcoxon_signed_rank(std::vector<double>(6, 0.01)).p_value == doctest::Approx(2.0 / 64));
  // Every difference 0: no p-value.
  const SignedRankTest all = wilcoxon_signed_rank(std::vector<double>{0, 0, 0});
  CHECK(all.method == UMethod::all_equal);
  CHECK_FALSE(all.p_value);
  CHECK(all.zeros == 3);
  CHECK_THROWS_AS(wilcoxon_signed_rank(std::vector<double>{}), abtrack::Error);
  CHECK_THROWS_AS(wilcoxon_signed_rank(std::vector<double>{1, std::nan("")}), abtrack::Error);
  CHECK_THROWS_AS(signed_rank_exact_p(std::vector<std::size_t>{}, 0), abtrack::Error);
}

TEST_CASE("stats: the signed-rank test, normal approximation above 50 differences") {
  // d = 1..60, all positive: T = 0, mean 915, var 60*61*121/24 = 18452.5, continuity 1/2.
  std::vector<double> d;
  for (int i = 1; i <= 60; ++i) d.push_back(i);
  const SignedRankTest t = wilcoxon_signed_rank(d);
  CHECK(t.method == UMethod::asymptotic);
  const double z = (0 - 915 + 0.5) / std::sqrt(18452.5);
  CHECK(*t.p_value == doctest::Approx(std::erfc(-z / std::sqrt(2.0))).epsilon(1e-9));
  // Symmetric: p = 1.
  std::vector<double> sym;
  for (int i = 1; i <= 30; ++i) {
    sym.push_back(i);
    sym.push_back(-i);
  }
  CHECK(*wilcoxon_signed_rank(sym).p_value == 1);
  // 50 differences are still exact.
  d.resize(50);
  CHECK(wilcoxon_signed_rank(d).method == UMethod::exact);
  CHECK(*wilcoxon_signed_rank(d).p_value == doctest::Approx(std::ldexp(2.0, -50)));
}

TEST_CASE("stats: paired_min_p_value is 2 / 2^n") {
  CHECK(paired_min_p_value(0) == 1);
  CHECK(paired_min_p_value(1) == 1);
  CHECK(paired_min_p_value(2) == 0.5);
  CHECK(paired_min_p_value(5) == 0.0625);
  CHECK(paired_min_p_value(6) == 0.03125);
  CHECK(paired_min_p_value(100) > 0);
}

TEST_CASE("stats: compare_paired computes the change from the per-round ratios of medians") {
  // Round medians: A 100, 200, 50, ...; B's ratio differs per round; each arm's samples vary.
  const std::vector<double> levels{100, 200, 50, 120, 80, 150, 90, 110};
  const std::vector<double> ratios{1.03, 1.01, 1.05, 1.02, 0.99, 1.04, 1.025, 1.015};
  std::vector<RoundPair> rounds = rounds_with(levels, ratios);
  rounds[2].b.push_back(1e6);  // an outlier moves B's median of that round only a little
  const Comparison c = compare_paired(rounds);
  CHECK(c.analysis == "paired");
  CHECK(c.pairs == 8);
  CHECK(c.n_a == 24);
  CHECK(c.n_b == 25);
  std::vector<double> d, pooled_a;
  for (const RoundPair& r : rounds) {
    d.push_back(std::log(median(r.b) / median(r.a)));
    pooled_a.insert(pooled_a.end(), r.a.begin(), r.a.end());
  }
  CHECK(c.median_a == doctest::Approx(median(pooled_a)));
  CHECK(c.delta_pct == doctest::Approx(std::expm1(median(d)) * 100));
  CHECK(c.ratio == doctest::Approx(std::exp(median(d))));
  // The CI is the binomial median CI of d, mapped like the change.
  const OrderStatisticCi pos = median_ci_positions(8, 0.95);
  REQUIRE(pos.bounded());
  std::sort(d.begin(), d.end());
  CHECK(c.delta_ci_pct.lo == doctest::Approx(std::expm1(d[pos.lo - 1]) * 100));
  CHECK(c.delta_ci_pct.hi == doctest::Approx(std::expm1(d[pos.hi - 1]) * 100));
  // 7 of 8 rounds slower: the signed-rank p of d.
  CHECK(*c.p_value == doctest::Approx(*wilcoxon_signed_rank(d).p_value));
  CHECK(c.method == UMethod::exact);
  CHECK(c.min_p == 2.0 / 256);
}

TEST_CASE("stats: pairing removes what the rounds share") {
  // Every round 5% slower than the one before (drift); B 2% slower than A in each round.
  std::vector<double> levels;
  for (int i = 0; i < 12; ++i) levels.push_back(100 * (1 + 0.05 * i));
  const auto rounds = rounds_with(levels, ratios_around(1.02, 12, 0.004));
  const Comparison paired = compare_paired(rounds);
  CHECK(paired.verdict == Verdict::worse);
  CHECK(*paired.p_value == doctest::Approx(2.0 / 4096));
  CHECK(paired.delta_ci_pct.lo > 1.7);
  CHECK(paired.delta_ci_pct.hi < 2.3);
  CompareOptions higher;
  higher.better = Better::higher;
  CHECK(compare_paired(rounds, higher).verdict == Verdict::better);
  // The same samples pooled: the drift swamps the 2%.
  std::vector<double> a, b;
  for (const RoundPair& r : rounds) {
    a.insert(a.end(), r.a.begin(), r.a.end());
    b.insert(b.end(), r.b.begin(), r.b.end());
  }
  const Comparison pooled = compare(a, b);
  CHECK(pooled.analysis == "unpaired");
  CHECK(pooled.pairs == 0);
  CHECK(pooled.verdict == Verdict::same);
}

TEST_CASE("stats: compare_paired's verdicts: equivalent, same, exact") {
  std::vector<double> levels(12, 100);
  for (std::size_t i = 0; i < levels.size(); ++i) levels[i] += static_cast<double>(i);
  // Ratios within +-0.2%: the whole CI inside +-0.5%.
  const Comparison eq = compare_paired(rounds_with(levels, ratios_around(1.0, 12, 0.004)));
  CHECK(eq.verdict == Verdict::equivalent);
  // Ratios spread over +-5%: no decision.
  const Comparison same = compare_paired(rounds_with(levels, ratios_around(1.0, 12, 0.1)));
  CHECK(same.verdict == Verdict::same);
  // The same ratio in every round (a size, a count): exact, no p-value, judged by its size.
  const Comparison exact = compare_paired(rounds_with({100, 100, 100}, {1.1, 1.1, 1.1}));
  CHECK(exact.exact);
  CHECK_FALSE(exact.p_value);
  CHECK(exact.delta_pct == doctest::Approx(10));
  CHECK(exact.delta_ci_pct.lo == exact.delta_pct);
  CHECK(exact.delta_ci_pct.hi == exact.delta_pct);
  CHECK(exact.verdict == Verdict::worse);
  CHECK(verdict_text(exact) == "worse (exact)");
  CHECK(has_note(exact, "every one of the 3 rounds gives the same ratio"));
  const Comparison zero = compare_paired(rounds_with({100, 200}, {1, 1}));
  CHECK(zero.exact);
  CHECK(zero.verdict == Verdict::same);
  // Exact comparisons stay out of Holm and keep their verdict.
  std::vector<Comparison> family{exact};
  adjust_family(family);
  CHECK(family[0].verdict == Verdict::worse);
  CHECK(family[0].family_size == 0);
}

TEST_CASE("stats: too few rounds are inconclusive, also after Holm") {
  // 5 rounds, B 10% slower in every one: p = 2/32 = 0.0625 at best, never below 0.05.
  const auto five = rounds_with({100, 101, 102, 103, 104}, ratios_around(1.1, 5, 0.01));
  const Comparison c = compare_paired(five);
  CHECK(c.verdict == Verdict::inconclusive);
  CHECK(*c.p_value == doctest::Approx(0.0625));
  CHECK(c.min_p == 0.0625);
  CHECK(has_note(c, "too few rounds: with 5 pairs the smallest possible p is 0.0625"));
  CHECK(has_note(c, "5 rounds give no bounded 95% CI of the change (need >= 6 rounds)"));
  // The pooled 15 + 15 samples could reach alpha, the 5 pairs cannot: Holm re-decides with the
  // pairs' floor.
  std::vector<Comparison> family{c};
  adjust_family(family);
  CHECK(family[0].verdict == Verdict::inconclusive);
  // 6 rounds can: worse, and still worse after Holm over itself.
  const Comparison six = compare_paired(rounds_with({100, 101, 102, 103, 104, 105}, ratios_around(1.1, 6, 0.01)));
  CHECK(six.verdict == Verdict::worse);
  std::vector<Comparison> family6{six};
  adjust_family(family6);
  CHECK(family6[0].verdict == Verdict::worse);
  CHECK(family6[0].family_size == 1);
  // alpha = 0.1: 5 rounds can decide.
  CompareOptions loose;
  loose.alpha = 0.1;
  CHECK(compare_paired(five, loose).verdict != Verdict::inconclusive);
  // One round: p = 1, no CI.
  const Comparison one = compare_paired(rounds_with({100}, {1.5}));
  CHECK(one.verdict == Verdict::inconclusive);
  CHECK(*one.p_value == 1);
  CHECK_FALSE(one.delta_ci_pct.bounded());
  CHECK(has_note(one, "1 round gives no bounded 95% CI"));
}

TEST_CASE("stats: compare_paired with equal medians in every round but varying samples") {
  // Medians equal in each round (d = 0 everywhere): exact 0 change.
  std::vector<RoundPair> rounds{{{1, 2, 3}, {0.5, 2, 9}}, {{4, 5, 6}, {5, 5.5, 4.5}}};
  const Comparison c = compare_paired(rounds);
  CHECK(c.exact);
  CHECK(c.delta_pct == 0);
  CHECK(c.verdict == Verdict::same);
  // One round of equal medians: no p-value, no exactness (seen once).
  const Comparison one = compare_paired({{{1, 2, 3}, {2, 2, 2}}});
  CHECK_FALSE(one.exact);
  CHECK_FALSE(one.p_value);
  CHECK(one.method == UMethod::all_equal);
  CHECK(has_note(one, "medians are equal in every round"));
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
