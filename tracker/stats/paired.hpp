#pragma once
// The paired analysis of interleaved rounds (docs/statistics.md, "Paired by round"): per round
// the ratio of the arms' medians; the two-sided Wilcoxon signed-rank test on the log ratios; the
// change as the median ratio with its distribution-free CI.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "stats/compare.hpp"
#include "stats/mann_whitney.hpp"

namespace abtrack::stats {

// One round of an interleaved comparison: the baseline's and the cell's samples measured in it.
struct RoundPair {
  std::vector<double> a;  // the baseline arm (A): non-empty, every sample finite and > 0
  std::vector<double> b;  // the cell (B): non-empty, every sample finite and > 0
};

// The result of a two-sided Wilcoxon signed-rank test of "the differences are symmetric about 0".
struct SignedRankTest {
  std::size_t n = 0;               // non-zero differences: zeros are dropped (scipy's zero_method='wilcox')
  std::size_t zeros = 0;           // differences equal to 0, dropped
  double w_plus = 0;               // sum of the ranks of |d| of the positive differences (midranks on ties)
  double w_minus = 0;              // the same for the negative ones; w_plus + w_minus = n(n+1)/2
  std::optional<double> p_value;   // two-sided; empty when every difference is 0
  UMethod method = UMethod::exact; // exact, exact_ties, asymptotic, or all_equal (every difference 0)
  bool ties = false;               // some |d| occur more than once among the non-zero differences
};

// The two-sided Wilcoxon signed-rank test on the differences `d`. Zeros are dropped. With at most
// 50 non-zero differences the p-value is exact: without ties it is scipy.stats.wilcoxon's
// method='exact'; with ties it is the exact distribution of W+ given the midranks (every sign
// pattern equally likely), p = min(1, 2 min(P(W+' <= W+), P(W+' >= W+))). With more than 50, the
// normal approximation with tie and continuity correction (scipy's method='approx',
// correction=True). Every difference 0: no p-value (method all_equal).
// Throws abtrack::Error (Exit::usage) for empty `d` or a non-finite difference.
SignedRankTest wilcoxon_signed_rank(std::span<const double> d);

// The two-sided p of the exact signed-rank test given doubled midranks (integers: 2 x the midrank
// of each |d|, all non-zero differences) and twice the observed W+: every one of the 2^n sign
// patterns equally likely, p = min(1, 2 min(P(W+' <= W+), P(W+' >= W+))). A DP over doubled rank
// sums, O(n^3) time. Throws abtrack::Error (Exit::usage) when `doubled_ranks` is empty or has more
// than 200 entries.
double signed_rank_exact_p(std::span<const std::size_t> doubled_ranks, std::size_t doubled_w_plus);

// The smallest two-sided p the signed-rank test can give with n pairs: 2 / 2^n (0.0625 with 5
// pairs, 0.031 with 6), capped at 1. Never throws (0 pairs give 1).
double paired_min_p_value(std::size_t pairs);

// Compares a cell with its baseline measured in the same rounds, paired by round. Per round i:
// r_i = median(B_i) / median(A_i), d_i = ln r_i. The change is exp(median(d)) - 1 (percent) with
// the distribution-free CI of the median of d at 1 - alpha (median_ci: order statistics,
// binomial), mapped the same way; the test is wilcoxon_signed_rank(d). Verdicts as decide(), with
// `inconclusive` when paired_min_p_value(rounds) >= alpha. Every d_i the same (>= 2 rounds): the
// change is exact (no p-value), judged by its size as compare() does for constant arms.
// The result has analysis "paired" and pairs = rounds.size(); n_a/n_b, median_a/median_b and
// ci_a/ci_b are of the pooled samples of each arm (for display); u_a stays 0.
// Throws abtrack::Error (Exit::usage) for no rounds, an empty arm in a round, a non-finite or
// non-positive sample (no ratio: compare such a metric unpaired) or invalid options.
Comparison compare_paired(const std::vector<RoundPair>& rounds, const CompareOptions& options = {});

}  // namespace abtrack::stats
