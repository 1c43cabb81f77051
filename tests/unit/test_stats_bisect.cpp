// The decisions of `abtrack bisect` (stats/bisect.hpp): the error budget per step, the batches,
// the classification of a tested commit against good and bad, step 0's confirmation, the search,
// and a fixed-seed simulation of whole bisects over noisy 16-commit histories.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "oracle/stats_support.hpp"
#include "stats/bisect.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

namespace {

// A round whose arms are level * pattern (the same within-invocation pattern in each arm).
ProbeRound probe_round(double good, double tested, double bad, const std::vector<double>& pattern) {
  ProbeRound r;
  for (double f : pattern) {
    r.good.push_back(good * f);
    r.tested.push_back(tested * f);
    r.bad.push_back(bad * f);
  }
  return r;
}

}  // namespace

TEST_CASE("bisect: the error budget is alpha over the expected steps") {
  CHECK(bisect_step_alpha(0.05, 1) == doctest::Approx(0.05));     // bad alone: step 0
  CHECK(bisect_step_alpha(0.05, 3) == doctest::Approx(0.025));    // ceil(log2 4) = 2
  CHECK(bisect_step_alpha(0.05, 15) == doctest::Approx(0.0125));  // ceil(log2 16) = 4
  CHECK(bisect_step_alpha(0.05, 16) == doctest::Approx(0.01));    // ceil(log2 17) = 5
  CHECK_THROWS_AS(bisect_step_alpha(0, 4), abtrack::Error);
}

TEST_CASE("bisect: the first look is the first bounded round count; batches grow by an eighth, even") {
  for (double alpha : {0.05, 0.0125, 0.001}) {
    const std::size_t n = sequential_first_look(alpha, bisect_prior_g);
    CHECK(std::isfinite(sequential_t_boundary(n, alpha, bisect_prior_g)));
    CHECK(!std::isfinite(sequential_t_boundary(n - 1, alpha, bisect_prior_g)));
  }
  CHECK(sequential_first_look(0.05, 1.0) == 5);
  CHECK(next_batch(0, 5, 128) == 6);
  CHECK(next_batch(6, 5, 128) == 2);
  CHECK(next_batch(24, 5, 128) == 4);
  CHECK(next_batch(64, 5, 128) == 8);
  CHECK(next_batch(124, 5, 128) == 4);
  CHECK(next_batch(128, 5, 128) == 0);
  CHECK(next_batch(0, 9, 4) == 4);  // never past max_rounds
  CHECK(next_batch(0, 5, 3) == 3);
  std::size_t done = 0, batches = 0;
  while (auto n = next_batch(done, 6, 128)) done += n, ++batches;
  CHECK(done == 128);
  MESSAGE("128 rounds take " << batches << " batches");
  // Each arm in each position across three batches and their reversed rounds.
  int at[3][3] = {};
  for (std::size_t b = 0; b < 3; ++b) {
    const auto o = probe_order(b);
    for (std::size_t i = 0; i < 3; ++i) {
      ++at[static_cast<std::size_t>(o[i])][i];
      ++at[static_cast<std::size_t>(o[i])][2 - i];
    }
  }
  for (auto& arm : at)
    for (int n : arm) CHECK(n == 2);
}

TEST_CASE("bisect: a tested commit is classified by which side of the midpoint its interval lies") {
  const std::vector<double> pattern{0.97, 1.0, 1.03, 0.99, 1.01};
  // Good 100, bad 110; the tested commit at 109-ish with a little round-to-round noise.
  std::vector<ProbeRound> near_bad, near_good, midway;
  for (int i = 0; i < 8; ++i) {
    const double jitter = 1 + 0.004 * ((i * 5) % 7 - 3);
    near_bad.push_back(probe_round(100 * jitter, 109 * jitter * (1 + 0.003 * (i % 2)), 110 * jitter, pattern));
    near_good.push_back(probe_round(100 * jitter, 101 * jitter * (1 + 0.003 * (i % 2)), 110 * jitter, pattern));
    midway.push_back(probe_round(100, 104.88 * (i % 2 ? 1.03 : 0.97), 110, pattern));
  }
  const ProbeEstimate bad = classify_probe(near_bad, Better::lower, 0.05);
  CHECK(bad.side == Side::bad);
  CHECK(bad.contrast_ci.lo > 0);
  CHECK(bad.change_pct == doctest::Approx(9.0).epsilon(0.02));
  CHECK(bad.full_pct == doctest::Approx(10.0).epsilon(0.01));
  CHECK(bad.theta == doctest::Approx(std::log(1.09 * 1.0015) / std::log(1.10)).epsilon(0.01));
  CHECK(bad.theta_ci.contains(bad.theta));
  CHECK(bad.theta_ci.lo > 0.5);
  CHECK(bad.basis == PairedBasis::sequential);
  const ProbeEstimate good = classify_probe(near_good, Better::lower, 0.05);
  CHECK(good.side == Side::good);
  CHECK(good.contrast_ci.hi < 0);
  CHECK(good.theta_ci.hi < 0.5);
  // Halfway (in log terms) with noise: never classified, however many rounds.
  const ProbeEstimate mid = classify_probe(midway, Better::lower, 0.05);
  CHECK(mid.side == Side::undecided);
  CHECK(mid.contrast_ci.contains(0));
  CHECK(!mid.why.empty());
  // Too few rounds to bound the interval: undecided, never "good".
  const ProbeEstimate two = classify_probe({near_good[0], near_good[1]}, Better::lower, 0.05);
  CHECK(two.side == Side::undecided);
  CHECK(!two.contrast_ci.bounded());
  // better: higher: bad is the lower one; a tested commit near it is bad.
  std::vector<ProbeRound> tput;
  for (const auto& r : near_bad) tput.push_back(ProbeRound{r.bad, r.tested, r.good});
  const ProbeEstimate t = classify_probe(tput, Better::higher, 0.05);
  CHECK(t.side == Side::good);                       // tested (109) is near good (110 here)
  CHECK(t.theta == doctest::Approx(1 - bad.theta));  // the same commits, good and bad swapped
  // Judged as better: lower, that "bad" is not worse than good: no position.
  CHECK(std::isnan(classify_probe(tput, Better::lower, 0.05).theta));
}

TEST_CASE("bisect: a deterministic metric is classified exactly; a bad sample is an error") {
  std::vector<ProbeRound> rounds(2, probe_round(100, 101, 120, {1.0, 1.0}));
  const ProbeEstimate e = classify_probe(rounds, Better::lower, 0.01);
  CHECK(e.exact);
  CHECK(e.side == Side::good);
  CHECK(e.change_pct == doctest::Approx(1.0));
  std::vector<ProbeRound> one(1, probe_round(100, 119, 120, {1.0, 1.0}));
  CHECK(classify_probe(one, Better::lower, 0.01).side == Side::undecided);  // one round is not exact
  CHECK_THROWS_AS(classify_probe({probe_round(100, 0, 120, {1.0})}, Better::lower, 0.05), abtrack::Error);
}

TEST_CASE("bisect: a round with a rare outlier invocation is set aside; a frequent one is the arm's behaviour") {
  std::vector<std::vector<double>> means;
  for (int i = 0; i < 20; ++i) {
    const double j = 0.01 * ((i * 7) % 5 - 2);
    means.push_back({j, 0.03 + j * 0.5, 0.03 - j});
  }
  auto rare = means;
  rare[7][1] += std::log(1.15);
  const auto flags = outlier_rounds(rare);
  CHECK(std::count(flags.begin(), flags.end(), true) == 1);
  CHECK(flags[7]);
  // Every fourth invocation of the tested commit 15% slower: how it behaves, kept.
  auto often = means;
  for (int i = 0; i < 20; i += 4) often[static_cast<std::size_t>(i)][1] += std::log(1.15);
  const auto kept = outlier_rounds(often);
  CHECK(std::count(kept.begin(), kept.end(), true) == 0);
  // Too few rounds to judge.
  auto few = std::vector<std::vector<double>>(rare.begin() + 5, rare.begin() + 9);
  const auto none = outlier_rounds(few);
  CHECK(std::count(none.begin(), none.end(), true) == 0);
  // classify_probe sets the round aside and says so.
  std::vector<ProbeRound> rounds;
  for (const auto& m : rare)
    rounds.push_back(probe_round(100 * std::exp(m[0]), 100 * std::exp(m[1]), 100 * std::exp(m[2]), {0.99, 1.01}));
  const ProbeEstimate e = classify_probe(rounds, Better::lower, 0.05);
  CHECK(e.set_aside == 1);
  CHECK(e.rounds == 19);
}

TEST_CASE("bisect: step 0 confirms beyond min_effect, refutes below it, and otherwise measures on") {
  CompareOptions o;
  o.alpha = 0.05;
  o.min_effect = 0.01;
  o.sequential = true;
  auto pairs = [](double ratio, double noise, int n) {
    std::vector<RoundPair> r;
    for (int i = 0; i < n; ++i) {
      const double j = 1 + noise * ((i * 5) % 7 - 3);
      r.push_back(
          {{100 * j, 101 * j, 99 * j}, {100 * ratio * j * (1 + noise * (i % 3 - 1)), 101 * ratio * j, 99 * ratio * j}});
    }
    return r;
  };
  CHECK(confirm_regression(compare_paired(pairs(1.2, 0.002, 8), o)) == Confirmation::worse);
  CHECK(confirm_regression(compare_paired(pairs(0.8, 0.002, 8), o)) == Confirmation::not_worse);    // better
  CHECK(confirm_regression(compare_paired(pairs(1.001, 0.001, 8), o)) == Confirmation::not_worse);  // within min_effect
  CHECK(confirm_regression(compare_paired(pairs(1.2, 0.002, 2), o)) == Confirmation::undecided);    // too few rounds
  CHECK(confirm_regression(compare_paired(pairs(1.012, 0.01, 8), o)) ==
        Confirmation::undecided);  // straddles min_effect
}

TEST_CASE("bisect: the search halves, skips and finds") {
  BisectSearch s(15);
  CHECK(s.pick() == 6);
  s.apply(6, Side::good);
  CHECK(s.pick() == 10);
  s.apply(10, std::nullopt);  // skipped
  CHECK(s.pick() == 9);
  s.apply(9, Side::bad);
  s.apply(8, Side::undecided);  // changes nothing
  CHECK(s.pick() == 7);
  s.apply(7, Side::good);
  CHECK(s.pick() == 8);
  s.apply(8, Side::bad);
  CHECK(!s.pick());
  CHECK(s.found());
  CHECK(s.hi == 8);
}

namespace {

// The noise model of the issue: per sample lognormal sigma_w, a per-invocation offset sigma_b, a
// slow drift over the invocations, and now and then an outlier invocation.
struct Machine {
  testing::Rng rng;
  double sigma_w = 0.03, sigma_b = 0.02, drift = 0.01, outlier_p = 0.02, outlier = 0.15;
  std::size_t samples = 10;
  long invocations = 0;

  explicit Machine(std::uint64_t seed) : rng(seed) {}

  std::vector<double> invoke(double level) {
    const double t = static_cast<double>(invocations++);
    double offset = drift * std::sin(2 * std::numbers::pi * t / 700) + 0.5 * drift * t / 1000 + sigma_b * rng.normal();
    if (rng.uniform() < outlier_p) offset += std::log1p(outlier);
    std::vector<double> x(samples);
    for (double& v : x) v = 100 * level * std::exp(offset + sigma_w * rng.normal());
    return x;
  }
};

enum class Outcome { right, wrong, undecided };

// What the simulated bisects measured: rounds of step 0 and of the later steps, how many steps.
struct Tally {
  double step0_rounds = 0, probe_rounds = 0;
  int step0 = 0, probes = 0, probes_undecided = 0;
};

// One bisect as `abtrack bisect` runs it: commits 0..15, good = 0, bad = 15, the first slow one
// `first_bad`; step 0 then the search, each step up to max_rounds rounds.
Outcome simulate(Machine& m, std::size_t first_bad, double regression, std::size_t max_rounds, Tally& tally) {
  const std::size_t commits = 15;  // the path: 1..15
  auto level = [&](std::size_t commit) { return commit >= first_bad ? 1 + regression : 1.0; };
  const double alpha = bisect_step_alpha(0.05, commits);
  CompareOptions o;
  o.alpha = alpha;
  o.min_effect = 0.005;
  auto step0 = confirm_until_decided(
      [&](std::size_t, std::size_t n, std::vector<RoundPair>& rounds) {
        for (std::size_t r = 0; r < n; ++r) {
          RoundPair p;
          if (r % 2 == 0) p.a = m.invoke(level(0)), p.b = m.invoke(level(15));
          else p.b = m.invoke(level(15)), p.a = m.invoke(level(0));
          rounds.push_back(std::move(p));
        }
        return true;
      },
      o, max_rounds);
  tally.step0_rounds += static_cast<double>(step0.attempted);
  ++tally.step0;
  if (confirm_regression(step0.estimate) != Confirmation::worse) return Outcome::undecided;
  BisectSearch search(commits);
  while (auto pick = search.pick()) {
    const std::size_t commit = static_cast<std::size_t>(*pick) + 1;
    auto step = probe_until_decided(
        [&](std::size_t batch, std::size_t n, std::vector<ProbeRound>& rounds) {
          auto order = probe_order(batch);
          for (std::size_t r = 0; r < n; ++r) {
            ProbeRound p;
            for (std::size_t i = 0; i < 3; ++i) {
              const ProbeArm arm = order[r % 2 == 0 ? i : 2 - i];
              if (arm == ProbeArm::good) p.good = m.invoke(level(0));
              else if (arm == ProbeArm::tested) p.tested = m.invoke(level(commit));
              else p.bad = m.invoke(level(15));
            }
            rounds.push_back(std::move(p));
          }
          return true;
        },
        Better::lower, alpha, max_rounds);
    tally.probe_rounds += static_cast<double>(step.attempted);
    ++tally.probes;
    if (step.estimate.side == Side::undecided) return ++tally.probes_undecided, Outcome::undecided;
    search.apply(*pick, step.estimate.side);
  }
  return static_cast<std::size_t>(search.hi) + 1 == first_bad ? Outcome::right : Outcome::wrong;
}

}  // namespace

TEST_CASE("bisect: simulated 16-commit histories with a 3% regression name the right commit") {
  const auto start = std::chrono::steady_clock::now();
  const int trials = 500;
  Tally tally;
  for (const bool random_commit : {false, true}) {
    Machine m(random_commit ? 31 : 30);
    int right = 0, wrong = 0, undecided = 0;
    for (int t = 0; t < trials; ++t) {
      const std::size_t first_bad = random_commit ? static_cast<std::size_t>(m.rng.between(1, 15)) : 11;
      switch (simulate(m, first_bad, 0.03, 128, tally)) {
        case Outcome::right: ++right; break;
        case Outcome::wrong: ++wrong; break;
        case Outcome::undecided: ++undecided; break;
      }
    }
    MESSAGE(std::string(random_commit ? "regression at a random commit" : "regression at commit 11")
            << ": right " << right << ", wrong " << wrong << ", undecided " << undecided << " of " << trials
            << "; mean invocations per bisect " << static_cast<double>(m.invocations) / trials);
    CHECK(right >= 0.95 * trials);
    CHECK(wrong <= 0.01 * trials);
  }
  MESSAGE("step 0 took " << tally.step0_rounds / tally.step0 << " rounds on average; a later step "
                         << tally.probe_rounds / tally.probes << ", and " << tally.probes_undecided << " of "
                         << tally.probes << " ran out of rounds");
  MESSAGE("simulation took " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                             << " s");
}
