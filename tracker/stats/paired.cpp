#include "stats/paired.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "stats/normal.hpp"
#include "stats/quantile.hpp"
#include "stats/samples.hpp"
#include "util/error.hpp"

namespace abtrack::stats {
namespace {

// The exact distribution is used up to this many non-zero differences (scipy's threshold).
constexpr std::size_t exact_limit = 50;

std::string percent(double confidence) { return fmt::format("{:g}%", confidence * 100); }

// The fewest samples whose median CI is bounded at `confidence` (6 at 0.95).
std::size_t samples_for_bounded_ci(double confidence) {
  std::size_t n = 1;
  while (n < 10000 && !median_ci_positions(n, confidence).bounded()) ++n;
  return n;
}

// An exact change is judged by its size alone: beyond min_effect it is better or worse, else the
// same (as compare() judges constant arms).
Verdict decide_exact(double change_pct, const CompareOptions& options) {
  const double delta = options.min_effect * 100;
  if (change_pct < -delta) return options.better == Better::lower ? Verdict::better : Verdict::worse;
  if (change_pct > delta) return options.better == Better::lower ? Verdict::worse : Verdict::better;
  return Verdict::same;
}

// (exp(x) - 1) * 100, keeping infinities.
double to_pct(double log_ratio) { return std::expm1(log_ratio) * 100; }

}  // namespace

double signed_rank_exact_p(std::span<const std::size_t> doubled_ranks, std::size_t doubled_w_plus) {
  if (doubled_ranks.empty() || doubled_ranks.size() > 200) {
    throw Error(Exit::usage, fmt::format("exact signed-rank test: {} differences (needs 1 to 200)",
                                         doubled_ranks.size()));
  }
  const std::size_t total = std::accumulate(doubled_ranks.begin(), doubled_ranks.end(), std::size_t{0});
  // prob[s]: P(twice W+ = s) over the sign patterns seen so far, each sign +/- with probability 1/2.
  std::vector<double> prob(total + 1, 0.0);
  prob[0] = 1;
  std::size_t reach = 0;
  for (std::size_t r : doubled_ranks) {
    reach += r;
    for (std::size_t s = reach + 1; s-- > 0;) prob[s] = 0.5 * (prob[s] + (s >= r ? prob[s - r] : 0.0));
  }
  double le = 0, ge = 0;
  for (std::size_t s = 0; s <= total; ++s) {
    if (s <= doubled_w_plus) le += prob[s];
    if (s >= doubled_w_plus) ge += prob[s];
  }
  return std::min(1.0, 2 * std::min(le, ge));
}

double paired_min_p_value(std::size_t pairs) {
  if (pairs == 0) return 1;
  return std::min(1.0, std::ldexp(2.0, -static_cast<int>(std::min<std::size_t>(pairs, 2000))));
}

SignedRankTest wilcoxon_signed_rank(std::span<const double> d) {
  check_samples(d, "signed-rank test");
  SignedRankTest t;
  std::vector<double> nonzero;
  for (double x : d) {
    if (x == 0) ++t.zeros;
    else nonzero.push_back(x);
  }
  t.n = nonzero.size();
  if (t.n == 0) {
    t.method = UMethod::all_equal;
    return t;
  }
  // Midranks of |d|, doubled so that they are integers: positions i+1 .. j share (i+1+j)/2.
  std::vector<std::size_t> order(t.n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return std::fabs(nonzero[x]) < std::fabs(nonzero[y]); });
  std::vector<std::size_t> doubled(t.n);
  double tie_term = 0;  // sum of t^3 - t over groups of tied |d|
  for (std::size_t i = 0; i < t.n;) {
    std::size_t j = i;
    while (j < t.n && std::fabs(nonzero[order[j]]) == std::fabs(nonzero[order[i]])) ++j;
    for (std::size_t k = i; k < j; ++k) doubled[order[k]] = i + 1 + j;
    const auto size = static_cast<double>(j - i);
    if (j - i > 1) t.ties = true;
    tie_term += size * size * size - size;
    i = j;
  }
  std::size_t doubled_w_plus = 0, doubled_w_minus = 0;
  for (std::size_t k = 0; k < t.n; ++k) (nonzero[k] > 0 ? doubled_w_plus : doubled_w_minus) += doubled[k];
  t.w_plus = static_cast<double>(doubled_w_plus) / 2;
  t.w_minus = static_cast<double>(doubled_w_minus) / 2;

  if (t.n <= exact_limit) {
    t.method = t.ties ? UMethod::exact_ties : UMethod::exact;
    t.p_value = signed_rank_exact_p(doubled, doubled_w_plus);
    return t;
  }
  // Normal approximation with tie and continuity correction (scipy's method='approx',
  // correction=True): T = min(W+, W-), shifted by 1/2 toward the mean.
  const auto n = static_cast<double>(t.n);
  const double mean = n * (n + 1) / 4;
  const double var = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48;
  const double stat = std::min(t.w_plus, t.w_minus);
  const double cc = stat > mean ? 0.5 : stat < mean ? -0.5 : 0.0;
  const double z = (stat - mean - cc) / std::sqrt(var);
  t.method = UMethod::asymptotic;
  t.p_value = std::min(1.0, 2 * normal_sf(std::fabs(z)));
  return t;
}

Comparison compare_paired(const std::vector<RoundPair>& rounds, const CompareOptions& options) {
  check_options(options);
  if (rounds.empty()) {
    throw Error(Exit::usage, "paired comparison: no rounds",
                "a paired comparison needs the cell and its baseline measured in the same rounds");
  }
  const double confidence = 1 - options.alpha;

  Comparison c;
  c.options = options;
  c.analysis = "paired";
  c.pairs = rounds.size();
  c.min_p = paired_min_p_value(c.pairs);

  std::vector<double> pooled_a, pooled_b, d;
  d.reserve(rounds.size());
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    check_positive_samples(rounds[i].a, fmt::format("round {}: A (baseline)", i + 1));
    check_positive_samples(rounds[i].b, fmt::format("round {}: B (variant)", i + 1));
    pooled_a.insert(pooled_a.end(), rounds[i].a.begin(), rounds[i].a.end());
    pooled_b.insert(pooled_b.end(), rounds[i].b.begin(), rounds[i].b.end());
    // One division, then one log: equal ratios give equal d (ties are seen as ties).
    d.push_back(std::log(median(rounds[i].b) / median(rounds[i].a)));
  }
  c.n_a = pooled_a.size();
  c.n_b = pooled_b.size();
  c.median_a = median(pooled_a);
  c.median_b = median(pooled_b);
  c.ci_a = median_ci(pooled_a, confidence);
  c.ci_b = median_ci(pooled_b, confidence);

  // A deterministic metric (a size, a count): every round gives the same ratio, seen twice or more.
  const bool one_ratio = std::all_of(d.begin(), d.end(), [&](double x) { return x == d.front(); });
  if (c.pairs >= 2 && one_ratio) {
    c.exact = true;
    c.method = UMethod::all_equal;
    c.ratio = std::exp(d.front());
    c.delta_pct = to_pct(d.front());
    c.delta_ci_pct = Interval{c.delta_pct, c.delta_pct};
    c.verdict = decide_exact(c.delta_pct, options);
    c.notes.push_back(fmt::format("every one of the {} rounds gives the same ratio: the change is exact (no p-value)",
                                  c.pairs));
    return c;
  }

  const SignedRankTest test = wilcoxon_signed_rank(d);
  c.method = test.method;
  c.p_value = test.p_value;
  if (test.method == UMethod::all_equal) c.notes.push_back("the arms' medians are equal in every round: no p-value");

  const double shift = median(d);
  const Interval ci = median_ci(d, confidence);
  c.ratio = std::exp(shift);
  c.delta_pct = to_pct(shift);
  c.delta_ci_pct = ci.bounded() ? Interval{to_pct(ci.lo), to_pct(ci.hi)} : Interval{};
  if (!c.delta_ci_pct.bounded()) {
    c.notes.push_back(fmt::format("{} {} no bounded {} CI of the change (need >= {} rounds)", c.pairs,
                                  c.pairs == 1 ? "round gives" : "rounds give", percent(confidence),
                                  samples_for_bounded_ci(confidence)));
  }

  if (c.min_p >= options.alpha) {
    c.verdict = Verdict::inconclusive;
    c.notes.push_back(fmt::format("too few rounds: with {} pairs the smallest possible p is {:.3g}, not below "
                                  "alpha {:g}",
                                  c.pairs, c.min_p, options.alpha));
  } else {
    // The pooled sample counts never make decide() inconclusive here: 2 / C(n1+n2, n1) <= 2 / 2^pairs.
    c.verdict = decide(c.p_value, c.delta_ci_pct, c.n_a, c.n_b, options);
  }
  return c;
}

}  // namespace abtrack::stats
