#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "oracle/stats_support.hpp"
#include "stats/compare.hpp"
#include "stats/hodges_lehmann.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();

bool has_note(const Comparison& c, const std::string& text) {
  for (const std::string& n : c.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("stats: decide follows statistics.md's order") {
  const CompareOptions lower;  // alpha 0.05, delta 0.5%
  CompareOptions higher;
  higher.better = Better::higher;
  // 1. inconclusive first, whatever the p and CI say.
  CHECK(decide(0.001, {-10, -5}, 3, 3, lower) == Verdict::inconclusive);
  CHECK(decide(0.001, {-0.1, 0.1}, 3, 3, lower) == Verdict::inconclusive);
  CHECK(decide(0.001, {-10, -5}, 4, 4, lower) == Verdict::better);  // 4+4 can reach 0.029
  // 2. better / worse need p < alpha and the whole CI beyond delta.
  CHECK(decide(0.01, {-10, -5}, 20, 20, lower) == Verdict::better);
  CHECK(decide(0.01, {5, 10}, 20, 20, lower) == Verdict::worse);
  CHECK(decide(0.01, {-10, -5}, 20, 20, higher) == Verdict::worse);
  CHECK(decide(0.01, {5, 10}, 20, 20, higher) == Verdict::better);
  CHECK(decide(0.01, {-10, -0.4}, 20, 20, lower) == Verdict::same);  // CI reaches inside delta
  CHECK(decide(0.06, {-10, -5}, 20, 20, lower) == Verdict::same);    // not significant
  CHECK(decide(0.05, {-10, -5}, 20, 20, lower) == Verdict::same);    // p < alpha is strict
  CHECK(decide(std::nullopt, {-10, -5}, 20, 20, lower) == Verdict::same);
  // 3. equivalent: the whole CI inside +-delta, significant or not.
  CHECK(decide(0.5, {-0.3, 0.4}, 20, 20, lower) == Verdict::equivalent);
  CHECK(decide(0.001, {-0.45, -0.2}, 20, 20, lower) == Verdict::equivalent);
  CHECK(decide(std::nullopt, {0, 0}, 20, 20, lower) == Verdict::equivalent);
  // 4. same: anything else.
  CHECK(decide(0.5, {-2, 3}, 20, 20, lower) == Verdict::same);
  CHECK(decide(0.5, {-inf, inf}, 20, 20, lower) == Verdict::same);
  CHECK(decide(0.01, {-inf, inf}, 20, 20, lower) == Verdict::same);
  // The threshold is settable.
  CompareOptions wide;
  wide.min_effect = 0.05;
  CHECK(decide(0.01, {-4, -3}, 20, 20, wide) == Verdict::equivalent);
  CompareOptions strict;
  strict.alpha = 0.01;
  CHECK(decide(0.02, {-10, -5}, 20, 20, strict) == Verdict::same);
  CHECK(decide(0.02, {-10, -5}, 4, 4, strict) == Verdict::inconclusive);  // 2/70 >= 0.01
  CHECK(decide(0.005, {-10, -5}, 5, 5, strict) == Verdict::better);       // 2/252 < 0.01
}

TEST_CASE("stats: verdict and direction names") {
  CHECK(to_string(Verdict::better) == "better");
  CHECK(to_string(Verdict::worse) == "worse");
  CHECK(to_string(Verdict::same) == "same");
  CHECK(to_string(Verdict::equivalent) == "equivalent");
  CHECK(to_string(Verdict::inconclusive) == "inconclusive");
  CHECK(to_string(Better::higher) == "higher");
  CHECK(parse_better("lower") == Better::lower);
  CHECK_THROWS_AS(parse_better("faster"), abtrack::Error);
}

TEST_CASE("stats: compare finds a clear speed-up") {
  testing::Rng rng(42);
  const std::vector<double> a = rng.times(20, 100, 0.01), b = rng.times(20, 90, 0.01);
  const Comparison c = compare(a, b);
  CHECK(c.n_a == 20);
  CHECK(c.n_b == 20);
  CHECK(c.method == UMethod::exact);
  REQUIRE(c.p_value);
  CHECK(*c.p_value < 1e-6);
  CHECK(c.delta_pct == doctest::Approx(-10).epsilon(0.06));
  CHECK(c.delta_ci_pct.lo < c.delta_pct);
  CHECK(c.delta_ci_pct.hi > c.delta_pct);
  CHECK(c.delta_ci_pct.contains(-10));
  CHECK(c.ratio == doctest::Approx(1 + c.delta_pct / 100));
  CHECK(c.ci_a.contains(c.median_a));
  CHECK(c.ci_b.contains(c.median_b));
  CHECK(c.verdict == Verdict::better);
  CHECK(c.notes.empty());
  CompareOptions higher;
  higher.better = Better::higher;  // e.g. throughput: lower is worse
  CHECK(compare(a, b, higher).verdict == Verdict::worse);
  CHECK(compare(b, a).verdict == Verdict::worse);
}

TEST_CASE("stats: compare with too few samples is inconclusive") {
  const Comparison c = compare(std::vector<double>{10, 11, 12}, std::vector<double>{5, 6, 7});
  CHECK(c.verdict == Verdict::inconclusive);
  CHECK(c.min_p == doctest::Approx(0.1));
  CHECK(*c.p_value == doctest::Approx(0.1));
  CHECK_FALSE(c.ci_a.bounded());
  CHECK_FALSE(c.delta_ci_pct.bounded());
  CHECK(has_note(c, "need >= 6 samples"));
  CHECK(has_note(c, "smallest possible p is 0.1"));

  const Comparison one = compare(std::vector<double>{10}, std::vector<double>{5});
  CHECK(one.verdict == Verdict::inconclusive);
  CHECK(one.median_a == 10);
  CHECK(one.delta_pct == doctest::Approx(-50));
}

TEST_CASE("stats: a constant metric gets its exact change, marked exact, with no p-value") {
  const std::vector<double> a(10, 4.25);
  const Comparison c = compare(a, a);
  CHECK(c.exact);
  CHECK_FALSE(c.p_value);
  CHECK(c.delta_pct == 0);
  CHECK(c.delta_ci_pct.lo == 0);
  CHECK(c.delta_ci_pct.hi == 0);
  CHECK(c.verdict == Verdict::same);
  CHECK(verdict_text(c) == "~ (exact)");
  CHECK(has_note(c, "the change is exact"));
  // Each arm constant but different (a size, a register count): the exact change, not p=1 or a
  // tie-corrected p; 3 + 3 samples are enough, as is a change below what noise could show.
  const Comparison d = compare(std::vector<double>(3, 4096), std::vector<double>{3584, 3584, 3584});
  CHECK(d.exact);
  CHECK_FALSE(d.p_value);
  CHECK(d.delta_pct == doctest::Approx(-12.5));
  CHECK(d.verdict == Verdict::better);
  CHECK(delta_text(d) == "-12.5%");
  CHECK(verdict_text(d) == "better (exact)");
  CHECK_FALSE(has_note(d, "smallest possible p"));
  CompareOptions higher;
  higher.better = Better::higher;
  CHECK(compare(std::vector<double>(3, 4096), std::vector<double>(3, 3584), higher).verdict == Verdict::worse);
  // Within min_effect: the same.
  CHECK(compare(std::vector<double>(4, 1000), std::vector<double>(4, 1003)).verdict == Verdict::same);
  // One sample on a side shows no constancy: not exact.
  const Comparison one = compare(std::vector<double>{4096}, std::vector<double>(5, 3584));
  CHECK_FALSE(one.exact);
  CHECK(one.verdict == Verdict::inconclusive);
  // One arm constant, the other not: the test decides, with the exact distribution with ties.
  const Comparison mixed = compare(std::vector<double>(6, 5.0), std::vector<double>{5, 6, 6, 6, 6, 6});
  CHECK_FALSE(mixed.exact);
  CHECK(mixed.method == UMethod::exact_ties);
  REQUIRE(mixed.p_value);
}

TEST_CASE("stats: a metric with zeros gets an absolute change") {
  // A corrupted-element count: 0 on the baseline, 3 on the variant, every sample.
  const Comparison c = compare(std::vector<double>(4, 0), std::vector<double>(4, 3));
  CHECK(c.absolute);
  CHECK(c.exact);
  CHECK(c.delta_abs == 3);
  CHECK(std::isnan(c.delta_pct));
  CHECK(c.verdict == Verdict::worse);
  CHECK(delta_text(c) == "+3 (abs)");
  CHECK(verdict_text(c) == "worse (exact)");
  CHECK(compare(std::vector<double>(4, 0), std::vector<double>(4, 0)).verdict == Verdict::same);
  // Not constant: Hodges-Lehmann on the values, its CI judged against 0, with the U test.
  const std::vector<double> a{0, 0, 1, 0, 0, 1, 0, 0, 0, 1}, b{3, 4, 3, 5, 2, 3, 4, 3, 6, 3};
  const Comparison d = compare(a, b);
  CHECK(d.absolute);
  CHECK_FALSE(d.exact);
  CHECK(d.delta_abs == doctest::Approx(3));
  REQUIRE(d.delta_abs_ci.bounded());
  CHECK(d.delta_abs_ci.lo > 0);
  REQUIRE(d.p_value);
  CHECK(*d.p_value < 0.001);
  CHECK(d.verdict == Verdict::worse);
  CHECK(has_note(d, "the change is absolute"));
  // The raw Hodges-Lehmann shift: the median of all differences b - a.
  const Shift s = hodges_lehmann(std::vector<double>{0, 1}, std::vector<double>{2, 5});
  CHECK(s.shift == doctest::Approx(3));  // differences 1 2 4 5
}

TEST_CASE("stats: noise without a change is same or equivalent") {
  testing::Rng rng(3);
  const std::vector<double> a = rng.times(30, 50, 0.02), b = rng.times(30, 50, 0.02);
  const Comparison c = compare(a, b);
  CHECK((c.verdict == Verdict::same || c.verdict == Verdict::equivalent));
  CompareOptions wide;
  wide.min_effect = 0.05;  // +-5% is "no change" for this metric
  CHECK(compare(a, b, wide).verdict == Verdict::equivalent);
}

TEST_CASE("stats: compare rejects bad input with usage errors") {
  const std::vector<double> ok{1, 2, 3, 4, 5, 6};
  const auto usage_error = [](auto&& f, const std::string& text) {
    try {
      f();
      FAIL("no error");
    } catch (const abtrack::Error& e) {
      CHECK(e.code() == abtrack::Exit::usage);
      CHECK_MESSAGE(std::string(e.what()).find(text) != std::string::npos, e.what());
    }
  };
  usage_error([&] { compare(std::vector<double>{}, ok); }, "A (baseline): no samples");
  usage_error([&] { compare(ok, std::vector<double>{}); }, "B (variant): no samples");
  usage_error([&] { compare(ok, std::vector<double>{1, std::nan("")}); }, "sample 2 is nan");
  usage_error([&] { compare(ok, std::vector<double>{1, inf}); }, "sample 2 is inf");
  usage_error([&] { compare(ok, ok, CompareOptions{Better::lower, 0, 0.005}); }, "alpha 0");
  usage_error([&] { compare(ok, ok, CompareOptions{Better::lower, 0.05, -0.1}); }, "min_effect");
  usage_error([&] { compare(ok, ok, CompareOptions{Better::lower, std::nan(""), 0.005}); }, "alpha");
}

TEST_CASE("stats: adjust_family applies Holm and re-decides") {
  testing::Rng rng(11);
  std::vector<Comparison> family;
  // A 2% change with few samples: significant alone, not after adjusting over 12.
  const std::vector<double> a = rng.times(8, 100, 0.01), b = rng.times(8, 97.5, 0.01);
  family.push_back(compare(a, b));
  for (int i = 0; i < 10; ++i) family.push_back(compare(rng.times(8, 100, 0.01), rng.times(8, 100, 0.01)));
  family.push_back(compare(std::vector<double>(8, 2.0), std::vector<double>(8, 2.0)));  // no p
  const double raw = *family[0].p_value;
  adjust_family(family);
  for (const Comparison& c : family) CHECK(c.family_size == 11);
  CHECK(*family[0].p_adjusted >= raw);
  CHECK(*family[0].decisive_p() == *family[0].p_adjusted);
  CHECK_FALSE(family.back().p_adjusted);
  CHECK(family.back().exact);
  CHECK(family.back().verdict == Verdict::same);  // exact: outside the family, verdict kept
  if (raw * 11 >= 0.05) CHECK(family[0].verdict != Verdict::better);
}

TEST_CASE("stats: compare's change CI is the 95% Moses interval by default") {
  testing::Rng rng(8);
  const std::vector<double> a = rng.times(12, 10, 0.05), b = rng.times(15, 9.8, 0.05);
  const Comparison c = compare(a, b);
  const LogShift s = hodges_lehmann_log(a, b, 0.95);
  CHECK(c.delta_ci_pct.lo == s.delta_ci_pct().lo);
  CHECK(c.delta_ci_pct.hi == s.delta_ci_pct().hi);
  CHECK(c.delta_pct == s.delta_pct());
  CompareOptions strict;
  strict.alpha = 0.01;  // 99% intervals
  const Comparison d = compare(a, b, strict);
  CHECK(d.delta_ci_pct.lo <= c.delta_ci_pct.lo);
  CHECK(d.delta_ci_pct.hi >= c.delta_ci_pct.hi);
  CHECK(d.ci_a.lo <= c.ci_a.lo);
}
