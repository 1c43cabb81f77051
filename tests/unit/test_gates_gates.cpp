#include <doctest/doctest.h>

#include "gates/gates.hpp"

using namespace abtrack;

namespace {
plan::Gate gate(const std::string& metric, plan::Op op, double t) {
  plan::Gate g;
  g.text = metric + " " + std::string(plan::to_string(op)) + " " + std::to_string(t);
  g.metric = metric;
  g.op = op;
  g.threshold = t;
  return g;
}
}  // namespace

TEST_CASE("a gate holds only when every sample holds") {
  std::map<std::string, std::vector<double>> s{{"rel_err", {1e-3, 7e-3, 2e-3}}, {"corrupt", {0, 0}}};
  auto r = gates::evaluate({gate("rel_err", plan::Op::le, 6.7e-3), gate("corrupt", plan::Op::eq, 0)}, s);
  REQUIRE(r.size() == 2);
  CHECK_FALSE(r[0].holds);
  CHECK(r[0].violations == 1);
  CHECK(*r[0].worst == 7e-3);
  CHECK(r[1].holds);
  CHECK(*r[1].worst == 0);
}

TEST_CASE("every operator and its worst sample") {
  std::vector<double> s{1, 2, 3};
  CHECK(gates::worst_sample(plan::Op::lt, 0, s) == 3);
  CHECK(gates::worst_sample(plan::Op::gt, 0, s) == 1);
  CHECK(gates::worst_sample(plan::Op::ge, 0, s) == 1);
  CHECK(gates::worst_sample(plan::Op::eq, 2.2, s) == 1);
  CHECK(gates::worst_sample(plan::Op::ne, 2.2, s) == 2);
  CHECK(plan::holds(plan::Op::ne, 1, 2));
  CHECK_FALSE(plan::holds(plan::Op::lt, 2, 2));
  CHECK(plan::holds(plan::Op::ge, 2, 2));
}

TEST_CASE("a gate on a metric without samples is not evaluated and does not hold") {
  auto r = gates::evaluate({gate("missing", plan::Op::le, 1)}, {});
  CHECK_FALSE(r[0].evaluated);
  CHECK_FALSE(r[0].holds);
  CHECK_FALSE(r[0].worst);
}
