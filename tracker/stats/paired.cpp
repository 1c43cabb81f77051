#include "stats/paired.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "stats/quantile.hpp"
#include "stats/samples.hpp"
#include "stats/student_t.hpp"
#include "util/error.hpp"

namespace abtrack::stats {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// An exact change is judged by its size alone: beyond min_effect it is better or worse, else the
// same (as compare() judges constant arms).
Verdict decide_exact(double change_pct, const CompareOptions& options) {
  const double delta = options.min_effect * 100;
  if (change_pct < -delta) return options.better == Better::lower ? Verdict::better : Verdict::worse;
  if (change_pct > delta) return options.better == Better::lower ? Verdict::worse : Verdict::better;
  return Verdict::same;
}

// The t quantile, remembered: an experiment's comparisons ask for few distinct (p, df).
double t_quantile(double p, double df) {
  static std::mutex mutex;
  static std::map<std::pair<double, double>, double> cache;
  const std::lock_guard lock(mutex);
  auto [it, fresh] = cache.try_emplace({p, df}, 0.0);
  if (fresh) it->second = student_t_quantile(p, df);
  return it->second;
}

}  // namespace

std::string_view to_string(PairedBasis basis) {
  switch (basis) {
    case PairedBasis::none: return "none";
    case PairedBasis::samples: return "samples";
    case PairedBasis::rounds: return "rounds";
    case PairedBasis::sequential: return "sequential";
  }
  return "none";
}

RoundSeries round_series(const std::vector<std::vector<std::vector<double>>>& rounds, std::span<const double> weights,
                         std::span<const std::string> arm_names) {
  RoundSeries s;
  double ss = 0, coef = 0;
  for (double w : weights) s.between_coef += w * w;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    if (rounds[i].size() != weights.size())
      throw Error(Exit::usage, fmt::format("round {}: {} arms, {} weights", i + 1, rounds[i].size(), weights.size()));
    double contrast = 0, c = 0;
    for (std::size_t k = 0; k < weights.size(); ++k) {
      const auto& x = rounds[i][k];
      check_positive_samples(
          x, fmt::format("round {}: {}", i + 1, k < arm_names.size() ? arm_names[k] : std::to_string(k + 1)));
      double m = 0;
      for (double v : x) m += std::log(v);
      m /= static_cast<double>(x.size());
      for (double v : x) ss += (std::log(v) - m) * (std::log(v) - m);
      s.within_df += x.size() - 1;
      contrast += weights[k] * m;
      c += weights[k] * weights[k] / static_cast<double>(x.size());
    }
    s.values.push_back(contrast);
    coef += c;
  }
  s.within_var = s.within_df > 0 ? ss / static_cast<double>(s.within_df) : 0;
  s.within_coef = rounds.empty() ? 0 : coef / static_cast<double>(rounds.size());
  return s;
}

double sequential_bayes_factor(double t, std::size_t n, double g) {
  if (n < 2) return 1;
  const double nd = static_cast<double>(n), nu = nd - 1, a = 1 + nd * g;
  const double x = t * t / nu;
  return std::exp(-0.5 * std::log(a) + nd / 2 * (std::log1p(x) - std::log1p(x / a)));
}

double sequential_t_boundary(std::size_t n, double alpha, double g) {
  if (n < 2) return inf;
  const double nd = static_cast<double>(n), a = 1 + nd * g;
  // BF(t*) = 1 / alpha: (1 + x) / (1 + x / a) = R with x = t*^2 / (n - 1).
  const double r = std::exp(2 / nd * (0.5 * std::log(a) - std::log(alpha)));
  if (r >= a) return inf;
  return std::sqrt((nd - 1) * (r - 1) / (1 - r / a));
}

RoundEstimate estimate_rounds(const RoundSeries& series, double alpha, bool sequential, double g) {
  if (!(alpha > 0 && alpha < 1)) throw Error(Exit::usage, fmt::format("alpha must be in (0, 1), not {}", alpha));
  RoundEstimate e;
  const std::size_t n = series.values.size();
  e.rounds = n;
  if (n == 0) return e;
  e.mean = mean(series.values);
  e.sigma_within = std::sqrt(series.within_var);
  if (n < 2) {
    e.why = "1 round cannot tell the change from an invocation's own offset (needs >= 2)";
    return e;
  }
  double s2 = 0;
  for (double v : series.values) s2 += (v - e.mean) * (v - e.mean);
  s2 /= static_cast<double>(n - 1);
  const double within = series.within_coef * series.within_var;  // Var(contrast) if invocations agree
  e.f_ratio = within > 0 ? s2 / within : s2 > 0 ? inf : 1;
  if (series.between_coef > 0) e.sigma_between = std::sqrt(std::max(0.0, (s2 - within) / series.between_coef));
  const auto nd = static_cast<double>(n);

  if (sequential) {
    e.basis = PairedBasis::sequential;
    if (s2 <= 0) {
      e.basis = PairedBasis::none;
      e.why = fmt::format("the {} rounds' contrasts are all equal: no spread to judge the change by", n);
      return e;
    }
    const double se = std::sqrt(s2 / nd);
    const double half = sequential_t_boundary(n, alpha, g) * se;
    e.ci = Interval{e.mean - half, e.mean + half};
    e.p_value = std::min(1.0, 1 / sequential_bayes_factor(e.mean / se, n, g));
    e.why = fmt::format("rounds: auto: an anytime-valid confidence sequence over the {} rounds' contrasts", n);
    return e;
  }

  double var = 0;
  if (n >= 3 && within > 0 && s2 <= within) {
    e.basis = PairedBasis::samples;
    var = std::max(s2, within);
    e.df = std::min(2.0 * (nd - 1), static_cast<double>(series.within_df));
    e.why = fmt::format(
        "the invocations agree (the rounds vary {:.2g}x as much as the samples predict): every sample counts",
        e.f_ratio);
  } else if (s2 > 0) {
    e.basis = PairedBasis::rounds;
    var = s2;
    e.df = nd - 1;
    e.why =
        n < 3
            ? fmt::format("{} rounds: the round is the unit (the invocations' agreement needs >= 3 to be seen)", n)
            : fmt::format(
                  "the invocations differ (the rounds vary {:.2g}x as much as the samples predict): the round is the unit",
                  e.f_ratio);
  } else {
    e.why = fmt::format("the {} rounds' contrasts are all equal and the samples say nothing of the noise", n);
    return e;
  }
  const double se = std::sqrt(var / nd);
  const double half = t_quantile(1 - alpha / 2, e.df) * se;
  e.ci = Interval{e.mean - half, e.mean + half};
  const double t = std::fabs(e.mean) / se;
  e.p_value = std::min(1.0, 2 * (1 - student_t_cdf(t, e.df)));
  return e;
}

std::optional<std::size_t> expected_rounds(double mean, double sd, double delta, double alpha, bool sequential,
                                           std::size_t max_rounds) {
  if (!(sd >= 0) || !std::isfinite(mean) || !(alpha > 0 && alpha < 1)) return std::nullopt;
  for (std::size_t n = 2; n <= max_rounds; ++n) {
    const double factor =
        sequential ? sequential_t_boundary(n, alpha) : t_quantile(1 - alpha / 2, static_cast<double>(n - 1));
    const double half = factor * sd / std::sqrt(static_cast<double>(n));
    if (std::fabs(mean) - half > delta || std::fabs(mean) + half < delta) return n;
  }
  return std::nullopt;
}

std::string paired_text(const Comparison& c) {
  const std::string basis = c.basis == "sequential" ? "auto" : c.basis;
  if (basis.empty() || basis == "none" || basis == "exact" || !std::isfinite(c.sigma_within_pct))
    return fmt::format("paired ×{}", c.pairs);
  return fmt::format("paired ×{} ({}, σw {:.1f}%, σb {:.1f}%)", c.pairs, basis, c.sigma_within_pct,
                     c.sigma_between_pct);
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

  std::vector<std::vector<std::vector<double>>> arms;
  std::vector<double> pooled_a, pooled_b;
  for (const RoundPair& r : rounds) {
    arms.push_back({r.a, r.b});
    pooled_a.insert(pooled_a.end(), r.a.begin(), r.a.end());
    pooled_b.insert(pooled_b.end(), r.b.begin(), r.b.end());
  }
  const std::string names[] = {"A (baseline)", "B (variant)"};
  const double weights[] = {-1.0, 1.0};
  const RoundSeries series = round_series(arms, weights, names);
  c.n_a = pooled_a.size();
  c.n_b = pooled_b.size();
  c.median_a = median(pooled_a);
  c.median_b = median(pooled_b);
  c.ci_a = median_ci(pooled_a, confidence);
  c.ci_b = median_ci(pooled_b, confidence);

  // A deterministic metric (a size, a count): each arm one value, seen in 2 rounds or more.
  auto one_value = [](const std::vector<double>& x) {
    return std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); });
  };
  if (c.pairs >= 2 && one_value(pooled_a) && one_value(pooled_b)) {
    c.exact = true;
    c.method = UMethod::all_equal;
    c.min_p = 1;
    c.ratio = pooled_b.front() / pooled_a.front();
    c.delta_pct = (c.ratio - 1) * 100;
    c.delta_ci_pct = Interval{c.delta_pct, c.delta_pct};
    c.verdict = decide_exact(c.delta_pct, options);
    c.basis = "exact";
    c.notes.push_back(fmt::format(
        "every sample of each arm is the same value in all {} rounds: the change is exact (no p-value)", c.pairs));
    return c;
  }

  const RoundEstimate e = estimate_rounds(series, options.alpha, options.sequential);
  c.basis = std::string(to_string(e.basis));
  c.sigma_within_pct = e.sigma_within * 100;
  c.sigma_between_pct = e.sigma_between * 100;
  c.df = e.df;
  c.ratio = std::exp(e.mean);
  c.delta_pct = pct_of_log_ratio(e.mean);
  c.p_value = e.p_value;
  c.method = UMethod::asymptotic;
  c.delta_ci_pct = e.ci.bounded() ? Interval{pct_of_log_ratio(e.ci.lo), pct_of_log_ratio(e.ci.hi)} : Interval{};
  if (!e.why.empty()) c.notes.push_back(e.why);
  if (e.basis == PairedBasis::none) {
    c.min_p = 1;
    c.verdict = Verdict::inconclusive;
    return c;
  }
  c.min_p = 0;
  if (!c.delta_ci_pct.bounded())
    c.notes.push_back(
        fmt::format("{} rounds give no bounded {:g}% confidence sequence yet", c.pairs, confidence * 100));
  c.verdict = decide(c.p_value, c.delta_ci_pct, c.n_a, c.n_b, options);
  return c;
}

}  // namespace abtrack::stats
