#pragma once
// The two-sided Mann-Whitney U test (Wilcoxon rank-sum test).
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace abtrack::stats {

// How a p-value was obtained.
enum class UMethod {
  exact,       // exact null distribution: no ties and at most 50 samples per side
  exact_ties,  // exact permutation distribution of U with midranks: ties, at most 60 samples in all
  asymptotic,  // normal approximation with tie and continuity correction
  all_equal,   // every value of both sides is the same: no p-value
};

// "exact", "exact with ties", "asymptotic", "all samples are equal". Never throws.
std::string_view to_string(UMethod method);

// The result of a two-sided Mann-Whitney U test of a against b.
struct UTest {
  double u_a = 0;                 // U1 = R1 - n1(n1+1)/2 (R1: rank sum of a; ties share average ranks)
  double u_b = 0;                 // U2 = n1 n2 - U1
  std::optional<double> p_value;  // two-sided; empty when every value is equal
  UMethod method = UMethod::exact;
  bool ties = false;  // some values occur more than once in the pooled sample
};

// The two-sided Mann-Whitney U test, as scipy.stats.mannwhitneyu computes it: the exact
// distribution (method='exact') when both sides have <= 50 samples and there are no ties,
// otherwise the normal approximation with tie correction and continuity correction
// (method='asymptotic', use_continuity=True). All values equal: no p-value.
// Throws abtrack::Error (Exit::usage) for an empty side or a non-finite sample.
UTest mann_whitney_u(std::span<const double> a, std::span<const double> b);

// P(U >= u) under the null hypothesis for sample sizes n1, n2 (exact distribution, no ties),
// by the recurrence p(n,m,u) = [n p(n-1,m,u-m) + m p(n,m-1,u)] / (n+m).
// Throws abtrack::Error (Exit::usage) when n1 or n2 is 0 or larger than 100.
double u_exact_sf(std::size_t n1, std::size_t n2, double u);

// The two-sided p of the permutation test of U with ties: every assignment of n1 of the
// pooled values to A equally likely, U1 from midranks; p = min(1, 2 min(P(U1' <= U1),
// P(U1' >= U1))). `doubled_midranks` are 2 x each pooled value's midrank (integers), `doubled_r1`
// twice A's rank sum. Exact (a DP over counts and doubled rank sums), O(N n1 n1 n2) time.
// Throws abtrack::Error (Exit::usage) when n1 is 0 or not below the number of values.
double u_exact_ties_p(std::span<const std::size_t> doubled_midranks, std::size_t n1, std::size_t doubled_r1);

// The smallest two-sided p-value the exact test can give for n1 + n2 samples: 2 / C(n1+n2, n1)
// (0.10 at 3+3, 0.029 at 4+4), capped at 1. Never throws (0 samples on a side give 1).
double min_p_value(std::size_t n1, std::size_t n2);

}  // namespace abtrack::stats
