#include "stats/bisect.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "stats/quantile.hpp"
#include "stats/samples.hpp"
#include "util/error.hpp"

namespace abtrack::stats {
namespace {

bool one_value(const std::vector<ProbeRound>& rounds, std::vector<double> ProbeRound::*arm) {
  const double first = ((rounds.front()).*arm).front();
  for (const auto& r : rounds)
    for (double v : r.*arm)
      if (v != first) return false;
  return true;
}

double mean_log(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += std::log(v);
  return s / static_cast<double>(x.size());
}

// Runs batches through `measure` until `decided` says so: the loop both steps share.
template <class Round, class Estimate, class Judge, class Decided>
Sequential<Estimate> until_decided(const std::function<bool(std::size_t, std::size_t, std::vector<Round>&)>& measure,
                                   std::size_t first, std::size_t max_rounds, Judge judge, Decided decided) {
  Sequential<Estimate> s;
  std::vector<Round> rounds;
  for (;;) {
    const std::size_t n = next_batch(s.attempted, first, max_rounds);
    if (n == 0) {
      s.stop = StopReason::max_rounds;
      return s;
    }
    if (!measure(s.batches, n, rounds)) {
      s.stop = StopReason::budget;
      return s;
    }
    s.attempted += n;
    ++s.batches;
    if (rounds.empty()) {
      s.stop = StopReason::no_rounds;
      return s;
    }
    s.estimate = judge(rounds);
    if (decided(s.estimate)) {
      s.stop = StopReason::decided;
      return s;
    }
  }
}

}  // namespace

double bisect_step_alpha(double alpha, std::size_t commits) {
  if (!(alpha > 0 && alpha < 1)) throw Error(Exit::usage, fmt::format("alpha must be in (0, 1), not {}", alpha));
  std::size_t steps = 0;
  while ((std::size_t{1} << steps) < commits + 1) ++steps;
  return alpha / static_cast<double>(std::max<std::size_t>(1, steps));
}

std::size_t sequential_first_look(double alpha, double g) {
  std::size_t n = 2;
  while (n < 100000 && !std::isfinite(sequential_t_boundary(n, alpha, g))) ++n;
  return n;
}

std::size_t next_batch(std::size_t done, std::size_t first, std::size_t max_rounds) {
  if (done >= max_rounds) return 0;
  std::size_t n = done == 0 ? std::max<std::size_t>(first, 2) : std::max<std::size_t>(done / 8, 2);
  n += n % 2;
  return std::min(n, max_rounds - done);
}

std::vector<bool> outlier_rounds(const std::vector<std::vector<double>>& means) {
  const std::size_t n = means.size();
  std::vector<bool> out(n, false);
  if (n < 5) return out;
  const std::size_t arms = means.front().size();
  std::vector<std::vector<double>> resid(arms, std::vector<double>(n));
  std::vector<double> all;
  for (std::size_t k = 0; k < arms; ++k) {
    std::vector<double> col(n);
    for (std::size_t i = 0; i < n; ++i) col[i] = means[i][k];
    const double med = median(col);
    for (std::size_t i = 0; i < n; ++i) {
      resid[k][i] = means[i][k] - med;
      all.push_back(std::fabs(resid[k][i]));
    }
  }
  const double scale = 1.4826 * median(all);
  if (!(scale > 0)) return out;
  const std::size_t allowed = std::max<std::size_t>(1, n / 10);
  for (std::size_t k = 0; k < arms; ++k) {
    std::vector<std::size_t> flagged;
    for (std::size_t i = 0; i < n; ++i)
      if (std::fabs(resid[k][i]) > 4 * scale) flagged.push_back(i);
    if (flagged.size() <= allowed)
      for (std::size_t i : flagged) out[i] = true;
  }
  if (static_cast<std::size_t>(std::count(out.begin(), out.end(), false)) < 2) return std::vector<bool>(n, false);
  return out;
}

std::array<ProbeArm, 3> probe_order(std::size_t batch) {
  static constexpr std::array<ProbeArm, 3> base{ProbeArm::good, ProbeArm::tested, ProbeArm::bad};
  std::array<ProbeArm, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) out[i] = base[(i + batch) % 3];
  return out;
}

std::string_view to_string(Side side) {
  switch (side) {
    case Side::good: return "good";
    case Side::bad: return "bad";
    case Side::undecided: return "undecided";
  }
  return "undecided";
}

std::string_view to_string(Confirmation c) {
  switch (c) {
    case Confirmation::worse: return "worse";
    case Confirmation::not_worse: return "not worse";
    case Confirmation::undecided: return "undecided";
  }
  return "undecided";
}

ProbeEstimate classify_probe(const std::vector<ProbeRound>& all_rounds, Better better, double alpha, double g) {
  if (!(alpha > 0 && alpha < 1)) throw Error(Exit::usage, fmt::format("alpha must be in (0, 1), not {}", alpha));
  ProbeEstimate e;
  e.theta = std::nan("");
  if (all_rounds.empty()) {
    e.why = "no rounds";
    return e;
  }
  static const std::string names[] = {"good", "tested", "bad"};
  {
    // Checks every sample (positive, finite) before the means are taken.
    std::vector<std::vector<std::vector<double>>> arms;
    for (const auto& r : all_rounds) arms.push_back({r.good, r.tested, r.bad});
    const double w[] = {1, 1, 1};
    round_series(arms, w, names);
  }
  std::vector<std::vector<double>> means;
  for (const auto& r : all_rounds) means.push_back({mean_log(r.good), mean_log(r.tested), mean_log(r.bad)});
  const std::vector<bool> outlier = outlier_rounds(means);
  std::vector<ProbeRound> rounds;
  for (std::size_t i = 0; i < all_rounds.size(); ++i)
    if (!outlier[i]) rounds.push_back(all_rounds[i]);
  e.set_aside = all_rounds.size() - rounds.size();
  e.rounds = rounds.size();
  // Positive toward bad: bad is worse, so higher for better: lower and lower for better: higher.
  const double sign = better == Better::lower ? 1.0 : -1.0;
  std::vector<std::vector<std::vector<double>>> arms;
  arms.reserve(rounds.size());
  for (const auto& r : rounds) arms.push_back({r.good, r.tested, r.bad});
  const double w_contrast[] = {-0.5 * sign, sign, -0.5 * sign};
  const double w_change[] = {-1, 1, 0};
  const double w_full[] = {-1, 0, 1};
  const RoundSeries contrast = round_series(arms, w_contrast, names);
  const RoundSeries change = round_series(arms, w_change, names);
  const RoundSeries full = round_series(arms, w_full, names);
  const double full_mean = mean(full.values);
  e.full_pct = pct_of_log_ratio(full_mean);
  e.contrast = mean(contrast.values);
  e.change_pct = pct_of_log_ratio(mean(change.values));
  const double full_oriented = sign * full_mean;
  if (full_oriented > 0) e.theta = 0.5 + e.contrast / full_oriented;

  if (rounds.size() >= 2 && one_value(rounds, &ProbeRound::good) && one_value(rounds, &ProbeRound::tested) &&
      one_value(rounds, &ProbeRound::bad)) {
    // A deterministic metric: the contrast is exact, its sign the answer (none exactly midway).
    e.exact = true;
    e.contrast_ci = Interval{e.contrast, e.contrast};
    e.change_ci_pct = Interval{e.change_pct, e.change_pct};
    if (std::isfinite(e.theta)) e.theta_ci = Interval{e.theta, e.theta};
    e.side = e.contrast > 0 ? Side::bad : e.contrast < 0 ? Side::good : Side::undecided;
    if (e.side == Side::undecided) e.why = "every sample is one value and the commit lies exactly midway";
    return e;
  }

  const RoundEstimate c = estimate_rounds(contrast, alpha, true, g);
  const RoundEstimate d = estimate_rounds(change, alpha, true, g);
  e.basis = c.basis;
  if (d.ci.bounded()) e.change_ci_pct = Interval{pct_of_log_ratio(d.ci.lo), pct_of_log_ratio(d.ci.hi)};
  if (!c.ci.bounded()) {
    e.why = c.basis == PairedBasis::none && !c.why.empty()
                ? c.why
                : fmt::format("{} rounds bound no interval at this level yet", rounds.size());
    return e;
  }
  e.contrast_ci = c.ci;
  if (full_oriented > 0) e.theta_ci = Interval{0.5 + c.ci.lo / full_oriented, 0.5 + c.ci.hi / full_oriented};
  if (c.ci.lo > 0) e.side = Side::bad;
  else if (c.ci.hi < 0) e.side = Side::good;
  else e.why = "its interval still holds the midpoint between good and bad";
  return e;
}

Confirmation confirm_regression(const Comparison& c) {
  const double delta = c.options.min_effect * 100;
  if (c.exact) return c.verdict == Verdict::worse ? Confirmation::worse : Confirmation::not_worse;
  if (c.verdict == Verdict::worse) return Confirmation::worse;
  if (!c.delta_ci_pct.bounded() || !c.p_value) return Confirmation::undecided;
  // The upper end of the change in the worse direction.
  const double worst = c.options.better == Better::lower ? c.delta_ci_pct.hi : -c.delta_ci_pct.lo;
  return worst < delta ? Confirmation::not_worse : Confirmation::undecided;
}

Sequential<ProbeEstimate> probe_until_decided(
    const std::function<bool(std::size_t, std::size_t, std::vector<ProbeRound>&)>& measure, Better better, double alpha,
    std::size_t max_rounds, double g) {
  return until_decided<ProbeRound, ProbeEstimate>(
      measure, sequential_first_look(alpha, g), max_rounds,
      [&](const std::vector<ProbeRound>& rounds) { return classify_probe(rounds, better, alpha, g); },
      [](const ProbeEstimate& e) { return e.side != Side::undecided; });
}

Sequential<Comparison> confirm_until_decided(
    const std::function<bool(std::size_t, std::size_t, std::vector<RoundPair>&)>& measure,
    const CompareOptions& options, std::size_t max_rounds) {
  CompareOptions o = options;
  o.sequential = true;
  check_options(o);
  return until_decided<RoundPair, Comparison>(
      measure, sequential_first_look(o.alpha, sequential_prior_g), max_rounds,
      [&](const std::vector<RoundPair>& all) {
        std::vector<std::vector<double>> means;
        for (const auto& r : all) {
          check_positive_samples(r.a, "good");
          check_positive_samples(r.b, "bad");
          means.push_back({mean_log(r.a), mean_log(r.b)});
        }
        const std::vector<bool> outlier = outlier_rounds(means);
        std::vector<RoundPair> rounds;
        for (std::size_t i = 0; i < all.size(); ++i)
          if (!outlier[i]) rounds.push_back(all[i]);
        Comparison c = compare_paired(rounds, o);
        if (rounds.size() < all.size())
          c.notes.push_back(
              fmt::format("{} of {} rounds set aside: an outlier invocation", all.size() - rounds.size(), all.size()));
        return c;
      },
      [](const Comparison& c) { return confirm_regression(c) != Confirmation::undecided; });
}

std::optional<std::ptrdiff_t> BisectSearch::pick() const {
  std::optional<std::ptrdiff_t> out;
  const std::ptrdiff_t mid = lo + (hi - lo) / 2;
  for (std::ptrdiff_t i = lo + 1; i < hi; ++i)
    if (!skipped.count(i) && (!out || std::abs(i - mid) < std::abs(*out - mid))) out = i;
  return out;
}

void BisectSearch::apply(std::ptrdiff_t index, std::optional<Side> side) {
  if (!side) skipped.insert(index);
  else if (*side == Side::bad) hi = index;
  else if (*side == Side::good) lo = index;
}

}  // namespace abtrack::stats
