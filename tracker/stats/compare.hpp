#pragma once
// The top-level A/B comparison: medians, CIs, the U test, the change and the verdict.
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stats/interval.hpp"
#include "stats/mann_whitney.hpp"

namespace abtrack::stats {

// Which direction of a metric is an improvement (a plan metric's `better:`).
enum class Better { lower, higher };

// "lower", "higher". Never throws.
std::string_view to_string(Better better);

// Parses "lower" / "higher". Throws abtrack::Error (Exit::usage) for anything else.
Better parse_better(std::string_view text);

// The verdict of one comparison, in the order statistics.md decides them.
enum class Verdict {
  inconclusive,  // too few samples: the smallest possible p, 2 / C(n1+n2, n1), is >= alpha
  better,        // p < alpha and the whole CI of the change lies beyond min_effect, improving
  worse,         // p < alpha and the whole CI of the change lies beyond min_effect, regressing
  equivalent,    // the whole CI of the change lies inside [-min_effect, +min_effect]
  same,          // anything else (printed "~")
};

// "inconclusive", "better", "worse", "equivalent", "same". Never throws.
std::string_view to_string(Verdict verdict);

// Options of a comparison (plan keys `better:`, `alpha:`, `min_effect:`).
struct CompareOptions {
  Better better = Better::lower;
  double alpha = 0.05;        // significance level; CIs are at 1 - alpha
  double min_effect = 0.005;  // delta, as a fraction (0.005 = 0.5%)
  // Paired comparisons of a `rounds: auto` design: the interval is an anytime-valid confidence
  // sequence and the p-value anytime-valid (stats/paired.hpp), so stopping when decided is sound.
  bool sequential = false;
};

// Checks 0 < alpha < 1 and 0 <= min_effect < 1 (finite).
// Throws abtrack::Error (Exit::usage) naming the bad option.
void check_options(const CompareOptions& options);

// Baseline A against variant B.
struct Comparison {
  std::size_t n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0;
  Interval ci_a, ci_b;               // distribution-free CIs of the medians at 1 - alpha
  double u_a = 0;                    // Mann-Whitney U of A
  UMethod method = UMethod::exact;   // how the p-value was obtained
  std::optional<double> p_value;     // two-sided U test p; empty when all samples are equal
  std::optional<double> p_adjusted;  // Holm-adjusted p, set by adjust_family
  std::size_t family_size = 0;       // number of comparisons Holm adjusted over (0: none)
  double min_p = 1;                  // smallest p the exact test can give: 2 / C(n1+n2, n1)
  double ratio = 1;                  // exp(Hodges-Lehmann shift of ln B - ln A): typical B / A
  double delta_pct = 0;              // (ratio - 1) * 100
  Interval delta_ci_pct;             // Moses CI of the change, percent; (-inf, +inf) if unbounded
  // Every sample of each arm is one value (>= 2 samples per arm: a size, a register count): the
  // change is exact, with no p-value and a CI of one point; the verdict is better/worse/same.
  bool exact = false;
  // Some sample is <= 0, so there is no ratio: the change is B - A in the metric's unit
  // (delta_abs, Hodges-Lehmann on raw values); delta_pct is NaN and delta_ci_pct unbounded.
  bool absolute = false;
  double delta_abs = 0;   // the absolute change B - A, when `absolute`
  Interval delta_abs_ci;  // its Moses CI at 1 - alpha; (-inf, +inf) if unbounded
  Verdict verdict = Verdict::inconclusive;
  CompareOptions options;          // the options the verdict was decided with
  std::vector<std::string> notes;  // why a number is missing or a verdict is weak, for the user
  // "unpaired" (compare) or "paired" (compare_paired, stats/paired.hpp: the same rounds of one
  // invocation, paired by round; then min_p is 0 when there is an interval, else 1).
  std::string analysis = "unpaired";
  std::size_t pairs = 0;  // rounds of a paired comparison; 0 when unpaired
  // A paired comparison's basis (stats::PairedBasis: "samples", "rounds", "sequential", "none",
  // or "exact"), the degrees of freedom of its t interval, and the variance components of ln
  // samples, as percent: within an invocation, and between invocations beyond what the round shares.
  std::string basis;
  double df = 0;
  double sigma_within_pct = std::numeric_limits<double>::quiet_NaN();
  double sigma_between_pct = std::numeric_limits<double>::quiet_NaN();

  // The p-value the verdict uses: p_adjusted when set, else p_value.
  std::optional<double> decisive_p() const { return p_adjusted ? p_adjusted : p_value; }
};

// The verdict for a p-value (empty: none), the change's CI in percent and the sample sizes,
// decided in statistics.md's order: inconclusive, better/worse, equivalent, same.
// Throws abtrack::Error (Exit::usage) for invalid options.
Verdict decide(std::optional<double> p_value, Interval delta_ci_pct, std::size_t n_a, std::size_t n_b,
               const CompareOptions& options);

// decide() with the test's floor given: inconclusive when min_p >= alpha.
Verdict decide_above_floor(std::optional<double> p_value, Interval delta_ci_pct, double min_p,
                           const CompareOptions& options);

// Compares baseline samples `a` with variant samples `b`: medians and their CIs, the two-sided
// Mann-Whitney U test, the Hodges-Lehmann change on log values with its Moses CI, and the verdict.
// Each arm constant (>= 2 samples each): the exact change, no p-value, verdict better/worse when
// beyond min_effect (any absolute change), else same. A sample <= 0: the change is absolute
// (B - A), decided with its CI against 0. Throws abtrack::Error (Exit::usage) for an empty side,
// a NaN/Inf sample or invalid options. One sample or too few samples are not errors: they give
// `inconclusive` with the reason in `notes`.
Comparison compare(std::span<const double> a, std::span<const double> b, const CompareOptions& options = {});

// The change as the document and the result line print it: "-12.5%", or for an absolute change
// "+3 (abs)" (the metric's value, util::format_number). Never throws.
std::string delta_text(const Comparison& c);

// The verdict as printed: "~" for same, with " (exact)" after an exact one ("better (exact)").
// Never throws.
std::string verdict_text(const Comparison& c);

// Holm-Bonferroni over a family of comparisons (the cells x metrics of one experiment): sets
// p_adjusted and family_size on each and re-decides its verdict with the adjusted p. Comparisons
// without a p-value (exact ones, all-equal samples) stay without one, keep their verdict and do
// not count in the family size.
// Throws abtrack::Error (Exit::usage) for invalid options in a comparison.
void adjust_family(std::span<Comparison> family);

}  // namespace abtrack::stats
