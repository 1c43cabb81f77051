// Schedules of fixed rounds: what append_round gives, round after round, for a seed.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "experiment/rounds.hpp"

using namespace abtrack;

namespace {

std::vector<experiment::Unit> units(std::initializer_list<std::vector<std::string>> values) {
  std::vector<experiment::Unit> out;
  for (const auto& group : values) {
    experiment::Unit u;
    for (const auto& v : group) u.push_back(plan::Cell{{v}});
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<std::string> order(const experiment::Scheduled& s) {
  std::vector<std::string> out;
  for (const auto& entry : s) out.push_back(entry.first.values.front());
  return out;
}

}  // namespace

TEST_CASE("fixed_rounds: not interleaved, the units in their order and no batch") {
  const auto s = experiment::fixed_rounds(units({{"a"}, {"b"}, {"c"}}), 2, 5, false);
  CHECK(order(s) == std::vector<std::string>{"a", "b", "c", "a", "b", "c"});
  for (std::size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].second.round == (i < 3 ? 1 : 2));
    CHECK(s[i].second.rounds == 2);
    CHECK(s[i].second.position == static_cast<int>(i) + 1);
    CHECK(s[i].second.seed == 5);
    CHECK(s[i].second.batch.empty());
  }
}

TEST_CASE("fixed_rounds: interleaved, a seed gives one shuffled order, each group backwards in even rounds") {
  const auto groups = units({{"a1", "a2"}, {"b1", "b2"}, {"c1", "c2"}, {"d1", "d2"}});
  const auto s = experiment::fixed_rounds(groups, 4, 42, true);
  CHECK(order(s) == order(experiment::fixed_rounds(groups, 4, 42, true)));
  REQUIRE(s.size() == 32);
  std::set<std::string> batches;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    const int round = s[i].second.round;
    const std::string first = s[i].first.values.front(), second = s[i + 1].first.values.front();
    CHECK(first.substr(0, 1) == second.substr(0, 1));  // a group's cells back to back
    CHECK(first.substr(1) == (round % 2 == 1 ? "1" : "2"));
    batches.insert(s[i].second.batch);
  }
  CHECK(batches.size() == 1);
  CHECK(batches.begin()->size() == 16);
  // Shuffled: the groups do not come in one order every round.
  const auto o = order(s);
  std::set<std::string> group_orders;
  for (std::size_t r = 0; r < 4; ++r) {
    std::string groups;
    for (std::size_t g = 0; g < 4; ++g) groups += o[8 * r + 2 * g].substr(0, 1);
    group_orders.insert(groups);
  }
  CHECK(group_orders.size() > 1);
}
