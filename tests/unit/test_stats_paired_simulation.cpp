// Fixed-seed simulations of interleaving and the paired analysis under drift (the figures of
// docs/statistics.md, "Paired by round"). A benchmark that drifts: every sample is
// value * (1 + drift * slot) * exp(noise * Z), slot counting the samples measured so far.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "oracle/stats_support.hpp"
#include "stats/compare.hpp"
#include "stats/paired.hpp"

using namespace abtrack::stats;

namespace {

constexpr int trials = 1000;
constexpr std::size_t rounds = 20;          // rounds of an interleaved run
constexpr std::size_t per_round = 10;       // samples per arm per round
constexpr double noise = 0.01;              // 1% lognormal noise
constexpr double drift = 0.00025;           // 0.025% slower per sample: +10% over the 400 samples
constexpr double alpha = 0.05;
// ~2 binomial standard errors of a rate alpha over `trials`.
const double slack = 2 * std::sqrt(trials * alpha * (1 - alpha));

struct Machine {
  testing::Rng rng;
  double drift_per_sample = 0;
  std::size_t slot = 0;

  std::vector<double> measure(std::size_t n, double value) {
    std::vector<double> v(n);
    for (double& x : v) x = value * (1 + drift_per_sample * static_cast<double>(slot++)) * std::exp(noise * rng.normal());
    return v;
  }
};

enum class Order { alternate, fixed };

// One interleaved run: each round measures A and B back to back, A first in even rounds when
// alternating, always A first when fixed; the second arm of a round runs `second_faster` faster.
std::vector<RoundPair> interleaved(Machine& m, double shift, Order order, double second_faster) {
  std::vector<RoundPair> out(rounds);
  for (std::size_t i = 0; i < rounds; ++i) {
    const bool a_first = order == Order::fixed || i % 2 == 0;
    const double a_value = 100 * (a_first ? 1 : 1 - second_faster);
    const double b_value = 100 * (1 + shift) * (a_first ? 1 - second_faster : 1);
    if (a_first) {
      out[i].a = m.measure(per_round, a_value);
      out[i].b = m.measure(per_round, b_value);
    } else {
      out[i].b = m.measure(per_round, b_value);
      out[i].a = m.measure(per_round, a_value);
    }
  }
  return out;
}

Comparison pooled(const std::vector<RoundPair>& run) {
  std::vector<double> a, b;
  for (const RoundPair& r : run) {
    a.insert(a.end(), r.a.begin(), r.a.end());
    b.insert(b.end(), r.b.begin(), r.b.end());
  }
  return compare(a, b);
}

// How often a comparison came out significant, better/worse, or `worse`; its mean change.
struct Tally {
  int significant = 0, decided = 0, worse = 0;
  double delta_sum = 0;

  void add(const Comparison& c) {
    if (c.p_value && *c.p_value < alpha) ++significant;
    if (c.verdict == Verdict::better || c.verdict == Verdict::worse) ++decided;
    if (c.verdict == Verdict::worse) ++worse;
    delta_sum += c.delta_pct;
  }
  std::string text() const {
    return fmt::format("p < 0.05 in {:.1f}%, better/worse in {:.1f}%, worse in {:.1f}%, mean change {:+.2f}%",
                       100.0 * significant / trials, 100.0 * decided / trials, 100.0 * worse / trials,
                       delta_sum / trials);
  }
};

}  // namespace

TEST_CASE("stats: under drift, arms measured one after the other differ (a)") {
  Machine m{testing::Rng(41), drift};
  Tally sequential;
  for (int t = 0; t < trials; ++t) {
    m.slot = 0;
    const auto a = m.measure(rounds * per_round, 100);  // all of A, then all of B: the same code
    const auto b = m.measure(rounds * per_round, 100);
    sequential.add(compare(a, b));
  }
  MESSAGE("(a) A/A, 200 + 200 samples one after the other, unpaired: " << sequential.text());
  CHECK(sequential.decided >= 0.9 * trials);  // far above alpha: the drift reads as a change
}

TEST_CASE("stats: interleaved rounds with alternating order keep the paired analysis at alpha (b)") {
  Machine m{testing::Rng(42), drift};
  Tally paired, unpaired;
  for (int t = 0; t < trials; ++t) {
    m.slot = 0;
    const auto run = interleaved(m, 0, Order::alternate, 0);
    paired.add(compare_paired(run));
    unpaired.add(pooled(run));
  }
  MESSAGE("(b) A/A, 20 alternating rounds of 10 + 10, paired: " << paired.text());
  MESSAGE("(b) the same runs, unpaired: " << unpaired.text());
  CHECK(paired.significant <= alpha * trials + slack);
  CHECK(paired.decided <= alpha * trials);
}

TEST_CASE("stats: under drift the paired analysis finds a 1% change far more often (c)") {
  Machine m{testing::Rng(43), drift};
  Tally paired, unpaired;
  for (int t = 0; t < trials; ++t) {
    m.slot = 0;
    const auto run = interleaved(m, 0.01, Order::alternate, 0);  // B 1% slower
    paired.add(compare_paired(run));
    unpaired.add(pooled(run));
  }
  MESSAGE("(c) B 1% slower, 20 alternating rounds of 10 + 10, paired: " << paired.text());
  MESSAGE("(c) the same runs, unpaired: " << unpaired.text());
  CHECK(paired.worse >= 0.7 * trials);
  CHECK(paired.worse >= 3 * unpaired.worse);
  CHECK(paired.decided == paired.worse);  // never `better`

  // Without drift, pairing costs some power: the pooled analysis uses every sample.
  Machine still{testing::Rng(44), 0};
  Tally paired_still, unpaired_still;
  for (int t = 0; t < trials; ++t) {
    const auto run = interleaved(still, 0.01, Order::alternate, 0);
    paired_still.add(compare_paired(run));
    unpaired_still.add(pooled(run));
  }
  MESSAGE("(c) without drift, paired: " << paired_still.text());
  MESSAGE("(c) without drift, unpaired: " << unpaired_still.text());
  CHECK(paired_still.worse >= 0.8 * trials);
  CHECK(unpaired_still.worse >= 0.8 * trials);
}

TEST_CASE("stats: a within-round order effect biases a fixed order, alternation removes it (d)") {
  // No drift; the second arm of each round runs 0.5% faster (warmer).
  Machine m{testing::Rng(45), 0};
  Tally paired_fixed, unpaired_fixed, paired_alt, unpaired_alt;
  for (int t = 0; t < trials; ++t) {
    const auto fixed = interleaved(m, 0, Order::fixed, 0.005);
    paired_fixed.add(compare_paired(fixed));
    unpaired_fixed.add(pooled(fixed));
    const auto alt = interleaved(m, 0, Order::alternate, 0.005);
    paired_alt.add(compare_paired(alt));
    unpaired_alt.add(pooled(alt));
  }
  MESSAGE("(d) A/A, second arm 0.5% faster, fixed order A B, paired: " << paired_fixed.text());
  MESSAGE("(d) fixed order, unpaired: " << unpaired_fixed.text());
  MESSAGE("(d) alternating order, paired: " << paired_alt.text());
  MESSAGE("(d) alternating order, unpaired: " << unpaired_alt.text());
  CHECK(paired_fixed.significant >= 0.8 * trials);
  CHECK(unpaired_fixed.significant >= 0.8 * trials);
  CHECK(paired_fixed.delta_sum / trials < -0.4);  // biased toward B, the second arm
  CHECK(unpaired_fixed.delta_sum / trials < -0.4);
  CHECK(paired_alt.significant <= alpha * trials + slack);
  CHECK(unpaired_alt.significant <= alpha * trials + slack);
  CHECK(std::fabs(paired_alt.delta_sum / trials) < 0.05);
  CHECK(std::fabs(unpaired_alt.delta_sum / trials) < 0.05);
}
