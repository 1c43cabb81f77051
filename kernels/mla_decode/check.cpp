#include "check.hpp"

#include "format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace abtrack::kernels::mla_decode {

namespace {

bool same_nonfinite(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b;  // both infinities of one sign
}

}  // namespace

CheckResult check_outputs(const Shape& shape, const Outputs& got, const Reference& ref) {
  const std::size_t n_out = static_cast<std::size_t>(shape.batch) * shape.heads * kDimV;
  const std::size_t n_lse = static_cast<std::size_t>(shape.batch) * shape.heads;
  if (got.out.size() != n_out || ref.out.size() != n_out || got.lse.size() != n_lse || ref.lse.size() != n_lse)
    throw std::invalid_argument("check_outputs: output sizes do not match the shape");
  CheckResult r;
  double diff2 = 0.0, ref2 = 0.0, ab = 0.0, aabb = 0.0;
  std::ostringstream first;
  for (std::size_t i = 0; i < n_out; ++i) {
    const double a = bf16_to_float(got.out[i]);
    const double b = ref.out[i];
    bool ok;
    if (!std::isfinite(a) || !std::isfinite(b)) {
      ok = false;  // non-finite output is corruption even where the reference agrees
      if (!same_nonfinite(a, b)) ++r.nonfinite_mismatches;
      diff2 = std::numeric_limits<double>::infinity();
    } else {
      const double abs_err = std::fabs(a - b);
      const double rel = b != 0.0 ? abs_err / std::fabs(b) : (abs_err == 0.0 ? 0.0 : INFINITY);
      ok = abs_err < 1e-3 || rel < 2.01 / 128.0;
      r.max_abs_err = std::max(r.max_abs_err, abs_err);
      diff2 += (a - b) * (a - b);
      ab += a * b;
      aabb += a * a + b * b;
    }
    ref2 += std::isfinite(b) ? b * b : 0.0;
    if (!ok) {
      if (r.failed_elements == 0) {
        const std::size_t bh = i / kDimV;
        first << "out[b=" << bh / shape.heads << "][h=" << bh % shape.heads << "][" << i % kDimV << "] = " << a
              << ", reference " << b;
      }
      ++r.failed_elements;
    }
  }
  r.rel_err = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  r.cos_diff = aabb > 0.0 ? 1.0 - 2.0 * ab / aabb : 0.0;
  r.corruption_pct = n_out ? 100.0 * static_cast<double>(r.failed_elements) / static_cast<double>(n_out) : 0.0;
  for (std::size_t i = 0; i < n_lse; ++i) {
    const double a = got.lse[i];
    const double b = ref.lse[i];
    bool ok;
    if (!std::isfinite(a) || !std::isfinite(b)) {
      ok = same_nonfinite(a, b);
      if (!ok) ++r.nonfinite_mismatches;
    } else {
      const double abs_err = std::fabs(a - b);
      ok = abs_err < 1e-6 || abs_err / std::fabs(b) < 8.01 / 65536.0;
      r.lse_max_abs_err = std::max(r.lse_max_abs_err, abs_err);
    }
    if (!ok) {
      if (r.failed_elements == 0 && r.failed_lse == 0)
        first << "lse[b=" << i / shape.heads << "][h=" << i % shape.heads << "] = " << a << ", reference " << b;
      ++r.failed_lse;
    }
  }
  r.first_failure = first.str();
  r.passed = r.failed_elements == 0 && r.failed_lse == 0 && r.nonfinite_mismatches == 0 && r.cos_diff < 5e-6;
  if (r.passed == false && r.first_failure.empty()) {
    std::ostringstream why;
    why << "cosine difference " << r.cos_diff << " >= 5e-6";
    r.first_failure = why.str();
  }
  return r;
}

}  // namespace abtrack::kernels::mla_decode
