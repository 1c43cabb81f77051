#include "stats/hodges_lehmann.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "stats/interval.hpp"
#include "stats/normal.hpp"
#include "stats/samples.hpp"
#include "util/error.hpp"

namespace abtrack::stats {
namespace {

std::vector<double> sorted_logs(std::span<const double> x) {
  std::vector<double> out;
  out.reserve(x.size());
  for (double v : x) out.push_back(std::log(v));
  std::sort(out.begin(), out.end());
  return out;
}

// Doubles mapped to integers in the same order, so bisection can walk adjacent doubles.
std::uint64_t order_key(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  return (bits >> 63) ? ~bits : bits | (std::uint64_t{1} << 63);
}
double from_order_key(std::uint64_t k) { return std::bit_cast<double>((k >> 63) ? k & ~(std::uint64_t{1} << 63) : ~k); }

// Number of pairs with fl(lb[j] - la[i]) <= t. Rounding is monotone, so for each i the valid j
// form a prefix that only grows with i (la ascending): one pass with two pointers.
std::uint64_t count_at_most(const std::vector<double>& la, const std::vector<double>& lb, double t) {
  std::uint64_t count = 0;
  std::size_t j = 0;
  for (double x : la) {
    while (j < lb.size() && lb[j] - x <= t) ++j;
    count += j;
  }
  return count;
}

// The smallest difference value t with count_at_most(t) >= k: that is the k-th difference.
double kth(const std::vector<double>& la, const std::vector<double>& lb, std::uint64_t k) {
  std::uint64_t lo = order_key(lb.front() - la.back());
  std::uint64_t hi = order_key(lb.back() - la.front());
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (count_at_most(la, lb, from_order_key(mid)) >= k) hi = mid;
    else lo = mid + 1;
  }
  return from_order_key(lo) + 0.0;  // + 0.0 turns -0 into 0
}

// The k-th smallest (1-based) of the pairwise differences lb[j] - la[i]. When there are few of
// them (a step compares ~20 cells of ~20 samples: 400 differences, 4 order statistics each) they
// are computed once and sorted; else each is found by bisection (kth), which needs no memory.
// Both give the same double: the k-th difference is the smallest t with count_at_most(t) >= k.
class KthDifference {
 public:
  KthDifference(const std::vector<double>& la, const std::vector<double>& lb) : m_la(la), m_lb(lb) {
    if (std::uint64_t{la.size()} * lb.size() > kSortUpTo) return;
    m_sorted.reserve(la.size() * lb.size());
    for (double x : la)
      for (double y : lb) m_sorted.push_back(y - x);
    std::sort(m_sorted.begin(), m_sorted.end());
  }
  double operator()(std::uint64_t k) const { return m_sorted.empty() ? kth(m_la, m_lb, k) : m_sorted[k - 1] + 0.0; }

 private:
  static constexpr std::uint64_t kSortUpTo = 1u << 16;
  const std::vector<double>& m_la;
  const std::vector<double>& m_lb;
  std::vector<double> m_sorted;
};

}  // namespace

double LogShift::ratio() const { return std::exp(shift); }

double LogShift::delta_pct() const { return pct_of_log_ratio(shift); }

Interval LogShift::delta_ci_pct() const {
  if (!ci.bounded()) return Interval{};
  return Interval{pct_of_log_ratio(ci.lo), pct_of_log_ratio(ci.hi)};
}

double kth_log_difference(std::span<const double> a, std::span<const double> b, std::uint64_t k) {
  check_positive_samples(a, "A");
  check_positive_samples(b, "B");
  const std::uint64_t m = std::uint64_t{a.size()} * b.size();
  if (k < 1 || k > m) throw Error(Exit::usage, fmt::format("difference {} of {} does not exist", k, m));
  return kth(sorted_logs(a), sorted_logs(b), k);
}

namespace {

// The median of the differences lb[j] - la[i] (both sorted) and its Moses interval.
Shift shift_of_sorted(const std::vector<double>& la, const std::vector<double>& lb, double confidence) {
  if (!(confidence > 0 && confidence < 1)) {
    throw Error(Exit::usage, fmt::format("confidence {} is not between 0 and 1", confidence));
  }
  const std::uint64_t m = std::uint64_t{la.size()} * lb.size();
  const double dm = static_cast<double>(m);
  const double dn = static_cast<double>(la.size() + lb.size());

  const KthDifference kth_diff(la, lb);
  Shift r;
  if (m % 2 == 1) {
    r.shift = kth_diff((m + 1) / 2);
  } else {
    r.shift = (kth_diff(m / 2) + kth_diff(m / 2 + 1)) / 2 + 0.0;
  }
  // statistics.md writes the 95% interval with z = 1.96; keep that constant bit for bit.
  const double z = confidence == 0.95 ? 1.96 : normal_quantile((1 + confidence) / 2);
  const double c = std::round(dm / 2 - z * std::sqrt(dm * (dn + 1) / 12));
  if (c >= 1) {
    const auto ci = static_cast<std::uint64_t>(c);
    r.ci = Interval{kth_diff(ci), kth_diff(m + 1 - ci)};
  }
  return r;
}

}  // namespace

LogShift hodges_lehmann_log(std::span<const double> a, std::span<const double> b, double confidence) {
  check_positive_samples(a, "A");
  check_positive_samples(b, "B");
  const Shift s = shift_of_sorted(sorted_logs(a), sorted_logs(b), confidence);
  LogShift r;
  r.shift = s.shift;
  r.ci = s.ci;
  return r;
}

Shift hodges_lehmann(std::span<const double> a, std::span<const double> b, double confidence) {
  check_samples(a, "A");
  check_samples(b, "B");
  std::vector<double> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return shift_of_sorted(sa, sb, confidence);
}

}  // namespace abtrack::stats
