// Correctness checks of decode outputs against the fp64 reference, as FlashMLA checks them.
#pragma once

#include "problem.hpp"
#include "reference.hpp"

#include <string>

namespace abtrack::kernels::mla_decode {

// What the comparison found. `passed` = every element passes (abs_err < 1e-3 OR
// rel_err < 2.01/128), cos_diff < 5e-6, inf/NaN positions match, and every lse passes
// (abs 1e-6 OR rel 8.01/65536, infinities matching).
struct CheckResult {
  double rel_err = 0.0;         // ||out - ref|| / ||ref|| (non-finite when out has NaN/inf)
  double max_abs_err = 0.0;     // over finite elements
  double corruption_pct = 0.0;  // % of out elements failing the element test or non-finite
  double cos_diff = 0.0;        // 1 - 2 sum(ab) / sum(a^2 + b^2)
  long long failed_elements = 0;
  long long nonfinite_mismatches = 0;
  long long failed_lse = 0;
  double lse_max_abs_err = 0.0;
  bool passed = false;
  std::string first_failure;  // human-readable description of the first failing item, or ""
};

// Compares `got` with `ref` (same shape; throws std::invalid_argument on a size mismatch).
CheckResult check_outputs(const Shape& shape, const Outputs& got, const Reference& ref);

}  // namespace abtrack::kernels::mla_decode
