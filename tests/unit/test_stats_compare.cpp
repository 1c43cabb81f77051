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
  CHECK(decide(0.01, {-10, -0.4}, 20, 20, lower) == Verdict::same);   // CI reaches inside delta
  CHECK(decide(0.06, {-10, -5}, 20, 20, lower) == Verdict::same);     // not significant
  CHECK(decide(0.05, {-10, -5}, 20, 20, lower) == Verdict::same);     // p < alpha is strict
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

TEST_CASE("stats: all-equal samples are equivalent with no p-value") {
  const std::vector<double> a(10, 4.25);
  const Comparison c = compare(a, a);
  CHECK_FALSE(c.p_value);
  CHECK(c.method == UMethod::all_equal);
  CHECK(c.delta_pct == 0);
  CHECK(c.delta_ci_pct.lo == 0);
  CHECK(c.delta_ci_pct.hi == 0);
  CHECK(c.verdict == Verdict::equivalent);
  CHECK(has_note(c, "all samples are equal"));
  // Each arm constant but different: ties, asymptotic p, a real change.
  const Comparison d = compare(a, std::vector<double>(10, 5.0));
  CHECK(d.method == UMethod::asymptotic);
  REQUIRE(d.p_value);
  CHECK(*d.p_value < 0.001);
  CHECK(d.verdict == Verdict::worse);
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
  usage_error([&] { compare(std::vector<double>{0, 1}, ok); }, "must be > 0");
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
  CHECK(family.back().verdict == Verdict::equivalent);
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
