#include "gates/gates.hpp"

#include <algorithm>
#include <cmath>

namespace abtrack::gates {

double worst_sample(plan::Op op, double threshold, const std::vector<double>& s) {
  switch (op) {
    case plan::Op::lt:
    case plan::Op::le: return *std::max_element(s.begin(), s.end());
    case plan::Op::gt:
    case plan::Op::ge: return *std::min_element(s.begin(), s.end());
    case plan::Op::eq:
      return *std::max_element(s.begin(), s.end(),
                               [&](double a, double b) { return std::fabs(a - threshold) < std::fabs(b - threshold); });
    case plan::Op::ne:
      return *std::min_element(s.begin(), s.end(),
                               [&](double a, double b) { return std::fabs(a - threshold) < std::fabs(b - threshold); });
  }
  return s.front();
}

std::vector<GateResult> evaluate(const std::vector<plan::Gate>& gates,
                                 const std::map<std::string, std::vector<double>>& samples) {
  std::vector<GateResult> out;
  for (const auto& g : gates) {
    GateResult r;
    r.expression = g.text;
    r.metric = g.metric;
    auto it = samples.find(g.metric);
    if (it != samples.end() && !it->second.empty()) {
      r.evaluated = true;
      r.violations = static_cast<std::size_t>(std::count_if(
          it->second.begin(), it->second.end(), [&](double v) { return !plan::holds(g.op, v, g.threshold); }));
      r.holds = r.violations == 0;
      r.worst = worst_sample(g.op, g.threshold, it->second);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace abtrack::gates
