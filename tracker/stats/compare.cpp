#include "stats/compare.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "stats/hodges_lehmann.hpp"
#include "stats/holm.hpp"
#include "stats/quantile.hpp"
#include "stats/samples.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace abtrack::stats {
namespace {

std::string percent(double confidence) { return fmt::format("{:g}%", confidence * 100); }

// The fewest samples whose median CI is bounded at `confidence` (6 at 0.95).
std::size_t samples_for_bounded_ci(double confidence) {
  std::size_t n = 1;
  while (n < 10000 && !median_ci_positions(n, confidence).bounded()) ++n;
  return n;
}

void note_median_ci(Comparison& c, std::string_view side, std::size_t n, const Interval& ci, double confidence) {
  if (ci.bounded()) return;
  c.notes.push_back(fmt::format("{}: {} {} no bounded {} CI of the median (need >= {} samples)", side, n,
                                n == 1 ? "sample gives" : "samples give", percent(confidence),
                                samples_for_bounded_ci(confidence)));
}

bool constant(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); });
}

// An exact change is judged by its size alone: beyond min_effect (relative) or non-zero
// (absolute) it is better or worse, else the same.
Verdict decide_exact(double change, bool absolute, const CompareOptions& options) {
  const double delta = absolute ? 0.0 : options.min_effect * 100;
  if (change < -delta) return options.better == Better::lower ? Verdict::better : Verdict::worse;
  if (change > delta) return options.better == Better::lower ? Verdict::worse : Verdict::better;
  return Verdict::same;
}

// The verdict of a comparison with the p-value it uses now (decisive_p).
Verdict redecide(const Comparison& c) {
  if (c.exact) return c.verdict;
  // A paired comparison's floor is its own (min_p: 0 with an interval, 1 without), not its
  // pooled samples'.
  if (c.analysis == "paired") return decide_above_floor(c.decisive_p(), c.delta_ci_pct, c.min_p, c.options);
  if (!c.absolute) return decide(c.decisive_p(), c.delta_ci_pct, c.n_a, c.n_b, c.options);
  // An absolute change has no relative min_effect: the CI is judged against 0.
  CompareOptions o = c.options;
  o.min_effect = 0;
  return decide(c.decisive_p(), c.delta_abs_ci, c.n_a, c.n_b, o);
}

}  // namespace

std::string delta_text(const Comparison& c) {
  if (c.absolute) {
    std::string v = util::format_number(c.delta_abs);
    return (c.delta_abs >= 0 ? "+" : "") + v + " (abs)";
  }
  if (!std::isfinite(c.delta_pct)) return c.delta_pct > 0 ? "+inf%" : "-inf%";
  return fmt::format("{:+.1f}%", c.delta_pct);
}

std::string verdict_text(const Comparison& c) {
  std::string v = c.verdict == Verdict::same ? "~" : std::string(to_string(c.verdict));
  return c.exact ? v + " (exact)" : v;
}

std::string_view to_string(Better better) { return better == Better::lower ? "lower" : "higher"; }

Better parse_better(std::string_view text) {
  if (text == "lower") return Better::lower;
  if (text == "higher") return Better::higher;
  throw Error(Exit::usage, fmt::format("better: '{}' is neither 'lower' nor 'higher'", text));
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::better: return "better";
    case Verdict::worse: return "worse";
    case Verdict::equivalent: return "equivalent";
    case Verdict::same: return "same";
  }
  return "?";
}

void check_options(const CompareOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw Error(Exit::usage, fmt::format("alpha {} is not between 0 and 1", options.alpha), "the default is 0.05");
  }
  if (!(options.min_effect >= 0 && options.min_effect < 1)) {
    throw Error(Exit::usage, fmt::format("min_effect {} is not a fraction in [0, 1)", options.min_effect),
                "the default is 0.005 (0.5%)");
  }
}

Verdict decide(std::optional<double> p_value, Interval delta_ci_pct, std::size_t n_a, std::size_t n_b,
               const CompareOptions& options) {
  return decide_above_floor(p_value, delta_ci_pct, min_p_value(n_a, n_b), options);
}

Verdict decide_above_floor(std::optional<double> p_value, Interval delta_ci_pct, double min_p,
                           const CompareOptions& options) {
  check_options(options);
  if (min_p >= options.alpha) return Verdict::inconclusive;
  const double delta = options.min_effect * 100;  // the CI is in percent
  const bool below = delta_ci_pct.hi < -delta;    // the whole CI is a decrease beyond delta
  const bool above = delta_ci_pct.lo > delta;     // the whole CI is an increase beyond delta
  if (p_value && *p_value < options.alpha && (below || above)) {
    const bool improved = (options.better == Better::lower) == below;
    return improved ? Verdict::better : Verdict::worse;
  }
  if (-delta <= delta_ci_pct.lo && delta_ci_pct.hi <= delta) return Verdict::equivalent;
  return Verdict::same;
}

Comparison compare(std::span<const double> a, std::span<const double> b, const CompareOptions& options) {
  check_options(options);
  check_samples(a, "A (baseline)");
  check_samples(b, "B (variant)");
  const double confidence = 1 - options.alpha;

  Comparison c;
  c.options = options;
  c.n_a = a.size();
  c.n_b = b.size();
  c.median_a = median(a);
  c.median_b = median(b);
  c.absolute = std::any_of(a.begin(), a.end(), [](double v) { return v <= 0; }) ||
               std::any_of(b.begin(), b.end(), [](double v) { return v <= 0; });
  c.min_p = min_p_value(c.n_a, c.n_b);

  // A deterministic metric (a size, a count): each arm one value, seen at least twice.
  if (c.n_a >= 2 && c.n_b >= 2 && constant(a) && constant(b)) {
    c.exact = true;
    c.method = UMethod::all_equal;
    c.ci_a = Interval{c.median_a, c.median_a};
    c.ci_b = Interval{c.median_b, c.median_b};
    if (c.absolute) {
      c.delta_abs = c.median_b - c.median_a;
      c.delta_abs_ci = Interval{c.delta_abs, c.delta_abs};
      c.delta_pct = std::nan("");
      c.ratio = std::nan("");
      c.delta_ci_pct = Interval{};
    } else {
      c.ratio = c.median_b / c.median_a;
      c.delta_pct = (c.ratio - 1) * 100;
      c.delta_ci_pct = Interval{c.delta_pct, c.delta_pct};
    }
    c.verdict = decide_exact(c.absolute ? c.delta_abs : c.delta_pct, c.absolute, options);
    c.notes.push_back("every sample of each arm is the same value: the change is exact (no p-value)");
    return c;
  }

  c.ci_a = median_ci(a, confidence);
  c.ci_b = median_ci(b, confidence);
  note_median_ci(c, "A", c.n_a, c.ci_a, confidence);
  note_median_ci(c, "B", c.n_b, c.ci_b, confidence);

  const UTest u = mann_whitney_u(a, b);
  c.u_a = u.u_a;
  c.method = u.method;
  c.p_value = u.p_value;
  if (u.method == UMethod::all_equal) c.notes.push_back("all samples are equal: no p-value");

  if (c.absolute) {
    const Shift shift = hodges_lehmann(a, b, confidence);
    c.delta_abs = shift.shift;
    c.delta_abs_ci = shift.ci;
    c.delta_pct = std::nan("");
    c.ratio = std::nan("");
    c.delta_ci_pct = Interval{};
    c.notes.push_back("a sample is <= 0, so there is no ratio: the change is absolute (B - A)");
    if (!c.delta_abs_ci.bounded()) {
      c.notes.push_back(
          fmt::format("{} + {} samples give no bounded {} CI of the change", c.n_a, c.n_b, percent(confidence)));
    }
  } else {
    const LogShift shift = hodges_lehmann_log(a, b, confidence);
    c.ratio = shift.ratio();
    c.delta_pct = shift.delta_pct();
    c.delta_ci_pct = shift.delta_ci_pct();
    if (!c.delta_ci_pct.bounded()) {
      c.notes.push_back(
          fmt::format("{} + {} samples give no bounded {} CI of the change", c.n_a, c.n_b, percent(confidence)));
    }
  }

  c.verdict = redecide(c);
  if (c.verdict == Verdict::inconclusive) {
    c.notes.push_back(
        fmt::format("too few samples: with {} + {} the smallest possible p is {:.3g}, not below "
                    "alpha {:g}",
                    c.n_a, c.n_b, c.min_p, options.alpha));
  }
  return c;
}

void adjust_family(std::span<Comparison> family) {
  std::vector<std::optional<double>> raw;
  raw.reserve(family.size());
  std::size_t defined = 0;
  for (const Comparison& c : family) {
    raw.push_back(c.p_value);
    if (c.p_value) ++defined;
  }
  const std::vector<std::optional<double>> adjusted = holm(raw);
  for (std::size_t i = 0; i < family.size(); ++i) {
    Comparison& c = family[i];
    c.p_adjusted = adjusted[i];
    c.family_size = defined;
    c.verdict = redecide(c);
  }
}

}  // namespace abtrack::stats
