#include "stats/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "stats/normal.hpp"
#include "stats/samples.hpp"
#include "util/error.hpp"

namespace abtrack::stats {
namespace {

constexpr std::size_t exact_limit = 50;
// The permutation distribution with ties costs O(N n1 n1 n2): at 40 values in all about a
// million steps, well under a millisecond, so a document comparing dozens of cells stays fast.
constexpr std::size_t exact_ties_limit = 40;

// Null pmf of U for sizes (n1, n2), indexed by u = 0 .. n1*n2. Row n keeps p(n, m, .) for every
// m <= n2; all terms are probabilities, so the recurrence neither overflows nor cancels.
std::vector<double> u_null_pmf(std::size_t n1, std::size_t n2) {
  std::vector<std::vector<double>> prev(n2 + 1), cur(n2 + 1);
  for (std::size_t m = 0; m <= n2; ++m) prev[m] = {1.0};  // p(0, m, u) = [u == 0]
  for (std::size_t n = 1; n <= n1; ++n) {
    cur[0] = {1.0};  // p(n, 0, u) = [u == 0]
    for (std::size_t m = 1; m <= n2; ++m) {
      std::vector<double> p(n * m + 1, 0.0);
      const double wn = static_cast<double>(n) / static_cast<double>(n + m);
      const double wm = static_cast<double>(m) / static_cast<double>(n + m);
      const std::vector<double>& from_n = prev[m];     // p(n-1, m, .), size (n-1)m + 1
      const std::vector<double>& from_m = cur[m - 1];  // p(n, m-1, .), size n(m-1) + 1
      for (std::size_t u = 0; u < from_n.size(); ++u) p[u + m] += wn * from_n[u];
      for (std::size_t u = 0; u < from_m.size(); ++u) p[u] += wm * from_m[u];
      cur[m] = std::move(p);
    }
    std::swap(prev, cur);
  }
  return prev[n2];
}

// P(U >= u) for u = 0 .. n1*n2 (index u), memoised per thread: an experiment compares many
// cells of the same sample counts, and the table is pure data of (n1, n2).
const std::vector<double>& u_null_sf_table(std::size_t n1, std::size_t n2) {
  struct Entry {
    std::size_t n1, n2;
    std::vector<double> sf;
  };
  thread_local std::vector<Entry> cache;
  for (const Entry& e : cache) {
    if (e.n1 == n1 && e.n2 == n2) return e.sf;
  }
  const std::vector<double> pmf = u_null_pmf(n1, n2);
  std::vector<double> sf(pmf.size());
  double sum = 0;
  for (std::size_t k = pmf.size(); k-- > 0;) {  // small terms first
    sum += pmf[k];
    sf[k] = std::min(sum, 1.0);
  }
  if (cache.size() >= 32) cache.erase(cache.begin());
  cache.push_back(Entry{n1, n2, std::move(sf)});
  return cache.back().sf;
}

}  // namespace

std::string_view to_string(UMethod method) {
  switch (method) {
    case UMethod::exact: return "exact";
    case UMethod::exact_ties: return "exact with ties";
    case UMethod::asymptotic: return "asymptotic";
    case UMethod::all_equal: return "all samples are equal";
  }
  return "?";
}

double u_exact_sf(std::size_t n1, std::size_t n2, double u) {
  if (n1 == 0 || n2 == 0 || n1 > 100 || n2 > 100) {
    throw Error(Exit::usage, fmt::format("exact U distribution for {} + {} samples is not available", n1, n2));
  }
  const double top = static_cast<double>(n1 * n2);
  if (u <= 0) return 1.0;
  if (u > top) return 0.0;
  return u_null_sf_table(n1, n2)[static_cast<std::size_t>(std::ceil(u))];
}

double u_exact_ties_p(std::span<const std::size_t> doubled_midranks, std::size_t n1, std::size_t doubled_r1) {
  const std::size_t n = doubled_midranks.size();
  if (n1 == 0 || n1 >= n) {
    throw Error(Exit::usage, fmt::format("a permutation test of {} of {} values is not defined", n1, n));
  }
  std::size_t total = 0;
  for (std::size_t w : doubled_midranks) total += w;
  // Counting the smaller side's assignments is cheaper; its tails are the other side's swapped.
  std::size_t k_max = n1, r1 = doubled_r1;
  if (n - n1 < n1) {
    k_max = n - n1;
    r1 = total - doubled_r1;
  }
  std::vector<std::size_t> w(doubled_midranks.begin(), doubled_midranks.end());
  std::sort(w.begin(), w.end());
  std::size_t s_max = 0;  // the largest doubled rank sum of k_max values
  for (std::size_t i = 0; i < k_max; ++i) s_max += w[n - 1 - i];
  if (r1 > s_max) r1 = s_max;  // not reachable by a valid input; keeps the indices in range
  // ways[k][s]: assignments of k values with doubled rank sum s, group by group (a group of t
  // tied values contributes c of them in C(t, c) ways). Integers, exact in a double up to 2^53.
  const std::size_t width = s_max + 1;
  std::vector<double> ways((k_max + 1) * width, 0.0), next;
  ways[0] = 1;
  std::size_t seen = 0, reach = 0;  // values processed; the largest doubled sum reached
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && w[j] == w[i]) ++j;
    const std::size_t t = j - i, wt = w[i];
    next.assign(ways.size(), 0.0);
    const std::size_t k_top = std::min(k_max, seen);
    double binom = 1;  // C(t, c)
    for (std::size_t c = 0; c <= t && c <= k_max && c * wt <= s_max; ++c) {
      if (c > 0) binom = binom * static_cast<double>(t - c + 1) / static_cast<double>(c);
      const std::size_t shift = c * wt, top = std::min(reach, s_max - shift);
      for (std::size_t k = 0; k <= k_top && k + c <= k_max; ++k) {
        const double* from = &ways[k * width];
        double* to = &next[(k + c) * width + shift];
        for (std::size_t s = 0; s <= top; ++s) to[s] += binom * from[s];
      }
    }
    std::swap(ways, next);
    seen += t;
    reach = std::min(s_max, reach + std::min(t, k_max) * wt);
    i = j;
  }
  const double* dist = &ways[k_max * width];
  double le = 0, ge = 0, all = 0;
  for (std::size_t s = 0; s < width; ++s) {
    all += dist[s];
    if (s <= r1) le += dist[s];
    if (s >= r1) ge += dist[s];
  }
  return std::min(1.0, 2 * std::min(le, ge) / all);
}

double min_p_value(std::size_t n1, std::size_t n2) {
  if (n1 == 0 || n2 == 0) return 1.0;
  const std::size_t k = std::min(n1, n2);
  const std::size_t n = n1 + n2;
  // C(n, k) by the integer product while it is exact in a double; past 2^53 through lgamma.
  double c = 1;
  for (std::size_t i = 1; i <= k; ++i) {
    c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
    if (c > 0x1p53) {
      const double dn = static_cast<double>(n), dk = static_cast<double>(k);
      return 2.0 * std::exp(std::lgamma(dk + 1) + std::lgamma(dn - dk + 1) - std::lgamma(dn + 1));
    }
  }
  return std::min(1.0, 2.0 / c);
}

UTest mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  check_samples(a, "A");
  check_samples(b, "B");
  const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;

  struct Value {
    double x;
    bool from_a;
  };
  std::vector<Value> pooled;
  pooled.reserve(n);
  for (double x : a) pooled.push_back({x, true});
  for (double x : b) pooled.push_back({x, false});
  std::sort(pooled.begin(), pooled.end(), [](const Value& l, const Value& r) { return l.x < r.x; });

  double rank_sum_a = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of tied values
  bool ties = false;
  std::vector<std::size_t> doubled_ranks(n);  // twice each value's midrank: integers
  std::size_t doubled_r1 = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && pooled[j].x == pooled[i].x) ++j;
    const double t = static_cast<double>(j - i);
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k) {
      doubled_ranks[k] = i + 1 + j;
      if (pooled[k].from_a) {
        rank_sum_a += avg_rank;
        doubled_r1 += i + 1 + j;
      }
    }
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }

  UTest r;
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2), dn = static_cast<double>(n);
  r.u_a = rank_sum_a - d1 * (d1 + 1) / 2;
  r.u_b = d1 * d2 - r.u_a;
  r.ties = ties;
  const double u = std::max(r.u_a, r.u_b);

  if (pooled.front().x == pooled.back().x) {
    r.method = UMethod::all_equal;
    return r;
  }
  if (!ties && n1 <= exact_limit && n2 <= exact_limit) {
    r.method = UMethod::exact;
    r.p_value = std::min(1.0, 2 * u_exact_sf(n1, n2, u));
    return r;
  }
  if (ties && n <= exact_ties_limit) {
    r.method = UMethod::exact_ties;
    r.p_value = u_exact_ties_p(doubled_ranks, n1, doubled_r1);
    return r;
  }
  r.method = UMethod::asymptotic;
  const double mu = d1 * d2 / 2;
  const double sigma = std::sqrt(d1 * d2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))));
  // u >= mu, so the continuity correction moves u toward the mean: z = (u - mu - 1/2) / sigma.
  const double z = (u - mu - 0.5) / sigma;
  r.p_value = std::clamp(2 * normal_sf(z), 0.0, 1.0);
  return r;
}

}  // namespace abtrack::stats
