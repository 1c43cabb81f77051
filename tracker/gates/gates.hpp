#pragma once
// Pure gate evaluation: a gate holds when it holds for every sample of its metric.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace abtrack::gates {

struct GateResult {
  std::string expression;  // as written in the plan
  std::string metric;
  bool evaluated = false;  // false when the metric has no samples (the run is invalid)
  bool holds = false;
  std::optional<double> worst;  // the sample furthest on the wrong side (or nearest the limit)
  std::size_t violations = 0;   // samples for which it does not hold
};

// Evaluates each gate against the metric's samples. A gate whose metric has no samples is
// not evaluated (and does not hold).
std::vector<GateResult> evaluate(const std::vector<plan::Gate>& gates,
                                 const std::map<std::string, std::vector<double>>& samples);

// The sample of `samples` that is worst for `op` against `threshold`: the largest for < and
// <=, the smallest for > and >=, the furthest from the threshold for ==, a sample equal to
// the threshold for != (else the nearest). Requires a non-empty span.
double worst_sample(plan::Op op, double threshold, const std::vector<double>& samples);

}  // namespace abtrack::gates
