#pragma once
// The paired analysis of interleaved rounds (docs/statistics.md, "Paired by round"). Each round
// runs every arm once (one invocation each); per round, a contrast of the arms' mean log samples
// (the cell's minus the baseline's, or a bisect's candidate against the midpoint of good and bad).
// The variance of those contrasts has two components (Kalibera & Jones, ISMM 2013): within an
// invocation (sample to sample) and between invocations (an offset each invocation draws, beyond
// what its round shares). When the invocations agree, every sample counts; when they do not, the
// round is the unit. With `sequential` (rounds: auto) the interval is an anytime-valid
// confidence sequence, so that looking after every round and stopping when it is decisive keeps
// its coverage.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stats/compare.hpp"
#include "stats/interval.hpp"

namespace abtrack::stats {

// One round of an interleaved comparison: the baseline's and the cell's samples measured in it.
struct RoundPair {
  std::vector<double> a;  // the baseline arm (A): non-empty, every sample finite and > 0
  std::vector<double> b;  // the cell (B): non-empty, every sample finite and > 0
};

// Per round, one contrast sum_k w_k * mean(ln x_k) over the arms' invocations, and what the
// samples within the invocations say about the contrasts' noise.
struct RoundSeries {
  std::vector<double> values;  // one contrast per round
  double within_var = 0;       // pooled variance of ln samples within an invocation (sigma_w^2)
  std::size_t within_df = 0;   // its degrees of freedom: sum over invocations of (samples - 1)
  double within_coef =
      0;  // mean over rounds of sum_k w_k^2 / m_k: Var(contrast) = within_coef * sigma_w^2 when invocations agree
  double between_coef = 0;  // sum_k w_k^2: Var(contrast) gains between_coef * sigma_b^2 from invocation offsets
};

// Builds the series: rounds[i][k] are arm k's samples in round i (every sample finite and > 0,
// every arm non-empty), weights[k] its weight in the contrast. Throws abtrack::Error (Exit::usage)
// naming the round and arm (`arm_names[k]`) of a bad or missing sample.
RoundSeries round_series(const std::vector<std::vector<std::vector<double>>>& rounds, std::span<const double> weights,
                         std::span<const std::string> arm_names);

// How the interval of the mean contrast was made.
enum class PairedBasis {
  none,        // fewer than 2 rounds, or no noise to judge by: no interval
  samples,     // the invocations agree: a mixed model on ln samples with round as a block, sigma_b = 0
  rounds,      // the invocations differ: Student's t on the rounds' contrasts
  sequential,  // rounds: auto: the anytime-valid t confidence sequence on the rounds' contrasts
};

// "none", "samples", "rounds", "sequential". Never throws.
std::string_view to_string(PairedBasis basis);

// The estimate of the mean contrast over the rounds.
struct RoundEstimate {
  std::size_t rounds = 0;
  double mean = 0;                // mean of the contrasts (log scale)
  Interval ci;                    // of the mean, at 1 - alpha; unbounded when none
  std::optional<double> p_value;  // of "the mean contrast is 0"; empty when no interval
  PairedBasis basis = PairedBasis::none;
  double df = 0;             // degrees of freedom of the t interval (0: none or sequential)
  double sigma_within = 0;   // sigma_w, sd of ln samples within an invocation
  double sigma_between = 0;  // sigma_b, sd of an invocation's own offset (0 when not above the within noise)
  double f_ratio = 0;  // Var(contrasts) / (within_coef * sigma_w^2): 1 when invocations agree; inf without within noise
  std::string why;     // one line: why this basis
};

// The prior variance g of the standardized effect (mean contrast / its sd per round) in the
// sequential analysis's mixture: the anytime-valid t-test of Perez-Ortiz, Lardy, de Heide &
// Grunwald (2024), with a N(0, g) effect size. A larger g decides large changes in fewer rounds
// (from 3 rounds at g = 10) and small ones in more. `rounds: auto` uses 10; bisect, whose
// contrasts are about half a round's noise, uses 1.
inline constexpr double sequential_prior_g = 10.0;

// The estimate of the series' mean at 1 - alpha. Fixed design (sequential = false): with n >= 3
// rounds whose contrasts vary no more than the within-invocation noise predicts (f_ratio <= 1),
// basis samples: Var = max(s^2, within_coef * sigma_w^2), t with min(2(n - 1), within_df) degrees of
// freedom; otherwise basis rounds: Student's t with n - 1. Sequential: the anytime-valid t
// confidence sequence, p = min(1, 1 / Bayes factor). Fewer than 2 rounds, or contrasts that do not
// vary where nothing else measures the noise: basis none. Throws abtrack::Error (Exit::usage) for
// alpha outside (0, 1).
RoundEstimate estimate_rounds(const RoundSeries& series, double alpha, bool sequential, double g = sequential_prior_g);

// The half-width factor t* of the sequential analysis's confidence sequence after n rounds at
// level alpha: mean +- t* s / sqrt(n); infinite while n is too small to bound it. Never throws.
double sequential_t_boundary(std::size_t n, double alpha, double g = sequential_prior_g);

// The Bayes factor (e-value) of the sequential analysis for a t statistic after n rounds.
double sequential_bayes_factor(double t, std::size_t n, double g = sequential_prior_g);

// The fewest rounds (2 to max_rounds) after which a mean contrast `mean` with a per-round standard
// deviation `sd` (both log scale) is expected to be decided against `delta` (= ln(1 + min_effect)):
// the interval, centred on `mean`, lies beyond +-delta or inside it. Fixed design: Student's t
// with n - 1 degrees of freedom; sequential: the confidence sequence. Empty when max_rounds are
// not expected to be enough. Never throws.
std::optional<std::size_t> expected_rounds(double mean, double sd, double delta, double alpha, bool sequential,
                                           std::size_t max_rounds);

// How a paired comparison was made, for tables: "paired ×6 (rounds, σw 3.0%, σb 2.1%)" (basis
// "auto" for sequential); "paired ×6" without variance components. Never throws.
std::string paired_text(const Comparison& c);

// Compares a cell with its baseline measured in the same rounds, paired by round: the contrast is
// mean(ln B_i) - mean(ln A_i), the change exp(mean) - 1 with its interval (estimate_rounds), the
// verdict as decide(). Every sample of each arm one value (>= 2 rounds): the change is exact (no
// p-value). The result has analysis "paired", pairs = rounds.size(), `basis` and the variance
// components; n_a/n_b, median_a/median_b and ci_a/ci_b are of the pooled samples of each arm.
// Throws abtrack::Error (Exit::usage) for no rounds, an empty arm in a round, a non-finite or
// non-positive sample (no ratio: compare such a metric unpaired) or invalid options.
Comparison compare_paired(const std::vector<RoundPair>& rounds, const CompareOptions& options = {});

}  // namespace abtrack::stats
