// Fixed-seed simulations of the paired analysis (the figures of docs/statistics.md, "Paired by
// round" and "rounds: auto"). The noise model has both variance components of a benchmark: every
// invocation draws its own offset (sigma_b), every sample its own noise (sigma_w), the machine
// drifts slowly, and now and then an invocation is an outlier (+15%). Each round runs the two arms
// back to back, the order alternating from round to round.
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

struct Noise {
  double sigma_w = 0.03;     // per sample
  double sigma_b = 0.02;     // per invocation
  double drift = 0.0002;     // per invocation, on the log scale: +0.4% over 20 invocations
  double outlier_p = 0.02;   // an invocation 15% slower
  std::size_t samples = 10;  // per invocation
};

struct Machine {
  testing::Rng rng;
  Noise noise;
  std::size_t invocations = 0;

  std::vector<double> invoke(double level) {
    double offset = noise.sigma_b * rng.normal() + noise.drift * static_cast<double>(invocations++);
    if (rng.uniform() < noise.outlier_p) offset += std::log(1.15);
    std::vector<double> x(noise.samples);
    for (double& v : x) v = level * std::exp(offset + noise.sigma_w * rng.normal());
    return x;
  }
  // One round: A at 100, B at 100 * ratio, the order alternating.
  RoundPair round(std::size_t i, double ratio) {
    RoundPair r;
    if (i % 2 == 0) {
      r.a = invoke(100);
      r.b = invoke(100 * ratio);
    } else {
      r.b = invoke(100 * ratio);
      r.a = invoke(100);
    }
    return r;
  }
};

bool decided(Verdict v) { return v == Verdict::better || v == Verdict::worse || v == Verdict::equivalent; }

// A rounds: auto comparison: a round at a time, stopping when decided or at max_rounds.
struct AutoResult {
  Comparison c;
  std::size_t rounds = 0;
};
AutoResult run_auto(Machine& m, double ratio, std::size_t max_rounds) {
  CompareOptions seq;
  seq.sequential = true;
  std::vector<RoundPair> rounds;
  AutoResult out;
  for (std::size_t i = 0; i < max_rounds; ++i) {
    rounds.push_back(m.round(i, ratio));
    if (rounds.size() < 2) continue;
    out.c = compare_paired(rounds, seq);
    out.rounds = rounds.size();
    if (decided(out.c.verdict)) break;
  }
  return out;
}

bool better_or_worse(const Comparison& c) { return c.verdict == Verdict::better || c.verdict == Verdict::worse; }

}  // namespace

TEST_CASE("stats: A/A, fixed rounds 2-20, sigma_b from 0 to 3 sigma_w: better/worse at most alpha") {
  constexpr int trials = 2000;
  double worst = 0;
  std::string table;
  for (double ratio_b : {0.0, 0.33, 0.67, 1.0, 2.0, 3.0}) {
    for (std::size_t n : {2u, 3u, 4u, 5u, 6u, 8u, 10u, 15u, 20u}) {
      Noise noise;
      noise.sigma_b = ratio_b * noise.sigma_w;
      Machine m{testing::Rng(1000 + n * 17 + static_cast<std::uint64_t>(ratio_b * 100)), noise};
      int wrong = 0, significant = 0;
      for (int t = 0; t < trials; ++t) {
        std::vector<RoundPair> rounds;
        for (std::size_t i = 0; i < n; ++i) rounds.push_back(m.round(i, 1.0));
        const Comparison c = compare_paired(rounds);
        wrong += better_or_worse(c);
        significant += c.p_value && *c.p_value < 0.05;
      }
      const double rate = static_cast<double>(wrong) / trials;
      worst = std::max(worst, rate);
      table += fmt::format(" {:.3f}", static_cast<double>(significant) / trials);
      CHECK_MESSAGE(rate <= 0.055, fmt::format("sigma_b = {} sigma_w, {} rounds: better/worse in {} of {}", ratio_b, n,
                                               wrong, trials));
    }
    table += "\n";
  }
  MESSAGE(fmt::format("A/A fixed: worst better/worse rate {:.4f}; p < 0.05 by sigma_b (rows) and rounds (columns):\n{}",
                      worst, table));
}

TEST_CASE("stats: A/A under rounds: auto (max 20 rounds): better/worse at most alpha") {
  constexpr int trials = 2000;
  for (double ratio_b : {0.0, 0.67, 3.0}) {
    Noise noise;
    noise.sigma_b = ratio_b * noise.sigma_w;
    Machine m{testing::Rng(77 + static_cast<std::uint64_t>(ratio_b * 100)), noise};
    int wrong = 0;
    double rounds = 0;
    for (int t = 0; t < trials; ++t) {
      const AutoResult r = run_auto(m, 1.0, 20);
      wrong += better_or_worse(r.c);
      rounds += static_cast<double>(r.rounds) / trials;
    }
    MESSAGE(fmt::format("A/A auto, sigma_b = {} sigma_w: better/worse in {} of {}, mean rounds {:.1f}", ratio_b, wrong,
                        trials, rounds));
    CHECK(wrong <= 0.055 * trials);
  }
}

TEST_CASE("stats: a +-40% change is decided with 3 rounds of 10 samples (sigma_w 3%, sigma_b 2%)") {
  constexpr int trials = 2000;
  for (double ratio : {1.4, 0.6}) {
    Machine m{testing::Rng(ratio > 1 ? 40 : 60), Noise{}};
    int right = 0;
    for (int t = 0; t < trials; ++t) {
      std::vector<RoundPair> rounds;
      for (std::size_t i = 0; i < 3; ++i) rounds.push_back(m.round(i, ratio));
      right += compare_paired(rounds).verdict == (ratio > 1 ? Verdict::worse : Verdict::better);
    }
    MESSAGE(fmt::format("{:+.0f}% in 3 rounds: decided in {} of {}", (ratio - 1) * 100, right, trials));
    CHECK(right >= 0.99 * trials);
  }
}

TEST_CASE("stats: rounds: auto reaches the fixed design's power with at most 0.6x its invocations") {
  constexpr int trials = 1000;
  // The fixed design: 10 rounds. Auto: up to 20. Power = the right better/worse verdict.
  std::string report;
  for (double change : {0.10, 0.20, 0.05}) {
    Machine fixed_m{testing::Rng(500 + static_cast<std::uint64_t>(change * 100)), Noise{}};
    Machine auto_m{testing::Rng(900 + static_cast<std::uint64_t>(change * 100)), Noise{}};
    int fixed_right = 0, auto_right = 0;
    double auto_rounds = 0;
    for (int t = 0; t < trials; ++t) {
      std::vector<RoundPair> rounds;
      for (std::size_t i = 0; i < 10; ++i) rounds.push_back(fixed_m.round(i, 1 + change));
      fixed_right += compare_paired(rounds).verdict == Verdict::worse;
      const AutoResult r = run_auto(auto_m, 1 + change, 20);
      auto_right += r.c.verdict == Verdict::worse;
      auto_rounds += static_cast<double>(r.rounds) / trials;
    }
    report += fmt::format(
        "+{:.0f}%: fixed 10 rounds power {:.3f}, 20 invocations; auto power {:.3f}, {:.1f} invocations ({:.2f}x)\n",
        change * 100, static_cast<double>(fixed_right) / trials, static_cast<double>(auto_right) / trials,
        2 * auto_rounds, auto_rounds / 10);
    if (change >= 0.1) {  // where the fixed design has its power
      CHECK(auto_right >= fixed_right - 0.01 * trials);
      CHECK(auto_rounds <= 0.6 * 10);
    }
  }
  MESSAGE(report);
}

TEST_CASE("stats: integer-rounded samples whose medians tie: never exact, rarely worse") {
  // Base at 100.3 and mine at 100.7 (+0.4%, inside min_effect 0.5%), 0.8% noise, rounded to
  // integers, 2 rounds.
  constexpr int trials = 2000;
  testing::Rng rng(1234);
  int exact = 0, worse = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<RoundPair> rounds(2);
    for (auto& r : rounds)
      for (int k = 0; k < 10; ++k) {
        r.a.push_back(std::round(100.3 * (1 + 0.008 * rng.normal())));
        r.b.push_back(std::round(100.7 * (1 + 0.008 * rng.normal())));
      }
    const Comparison c = compare_paired(rounds);
    exact += c.exact;
    worse += c.verdict == Verdict::worse;
  }
  MESSAGE(fmt::format("integer-rounded, 2 rounds: exact in {}, worse in {} of {}", exact, worse, trials));
  CHECK(exact == 0);
  CHECK(worse <= 0.025 * trials);
}
