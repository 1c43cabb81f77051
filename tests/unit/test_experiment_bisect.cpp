// The parts of `abtrack bisect` that need no process: the bisect's plan, revisions counted back
// over the user's commits, the judgement of a step and the search it leaves, the committed
// state read back, and the budget.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "experiment/bisect.hpp"
#include "experiment/bisect_probe.hpp"
#include "experiment/bisect_state.hpp"
#include "plan/load.hpp"
#include "util/error.hpp"

using namespace abtrack;
using experiment::Judgement;
namespace fs = std::filesystem;

namespace {

// The plan of `text` with a command and a metric t (better: lower) added.
plan::Plan parse(const std::string& text) {
  return plan::parse_plan(text + "command: echo\nmetrics:\n  t: {json: t, better: lower}\n", "abtrack.yaml",
                          fs::temp_directory_path());
}

// A state of `n` commits c0..c{n-1} whose steps judged the commits at `indexes` as `judged`
// (step 0, bad against good, first).
experiment::BisectState state(std::size_t n, const std::vector<std::pair<std::ptrdiff_t, Judgement>>& judged) {
  experiment::BisectState st;
  st.id = "1111111-2222222-abcdef";
  st.good = "good-commit";
  st.bad = "c" + std::to_string(n - 1);
  st.good_spec = "main~8";
  st.bad_spec = "main";
  for (std::size_t i = 0; i < n; ++i) st.path.push_back("c" + std::to_string(i));
  experiment::BisectStep zero;
  zero.number = 0;
  zero.index = static_cast<std::ptrdiff_t>(n) - 1;
  zero.commit = st.path.back();
  zero.like = Judgement::bad;
  zero.line = "+20.0% worse";
  st.steps.push_back(zero);
  for (const auto& [index, like] : judged) {
    experiment::BisectStep s;
    s.number = static_cast<int>(st.steps.size());
    s.index = index;
    s.commit = st.path[static_cast<std::size_t>(index)];
    s.like = like;
    s.line = std::string(experiment::to_string(like));
    st.steps.push_back(s);
  }
  return st;
}

}  // namespace

TEST_CASE("bisect_plan: a plan without revisions gets a rev axis of good, tested and bad in front") {
  auto user = parse("experiment: b\ndoc: B.md\nbuild: make\naxes: {size: [small, large]}\n");
  REQUIRE(user.setup == "make");  // without revisions the build runs as the setup
  std::array<std::string, 3> names;
  const auto p = experiment::bisect_plan(user, names);
  CHECK(names == std::array<std::string, 3>{"good", "tested", "bad"});
  REQUIRE(p.axes.size() == 2);
  CHECK(p.axes.front().name == plan::kRevAxis);
  CHECK(p.axes.front().values == std::vector<std::string>{"good", "tested", "bad"});
  CHECK(p.axes.back().name == "size");
  CHECK(p.setup.empty());  // the build is a build per code tree again
  CHECK(p.build == "make");
  CHECK(p.jobs == 1);
  REQUIRE(p.revisions.size() == 3);
  for (const auto& rev : p.revisions) CHECK(rev.second == "HEAD");
  REQUIRE(p.baseline);
  CHECK(*p.baseline == plan::Assignment{{std::string(plan::kRevAxis), "good"}});

  auto with_rev = parse("experiment: b\ndoc: B.md\naxes: {rev: [1, 2]}\n");
  CHECK_THROWS_AS(experiment::bisect_plan(with_rev, names), Error);
}

TEST_CASE("bisect_plan: a plan with revisions plays its baseline as good and its first other as tested") {
  auto user = parse(
      "experiment: b\ndoc: B.md\nrevisions: {base: main, mine: HEAD, bad: HEAD~1}\nbaseline: {rev: mine}\n"
      "axes: {size: [small]}\n");
  std::array<std::string, 3> names;
  auto p = experiment::bisect_plan(user, names);
  CHECK(names == std::array<std::string, 3>{"mine", "base", "bad"});  // the plan's bad plays bad
  CHECK(p.axes.front().values == std::vector<std::string>{"mine", "base", "bad"});
  CHECK(*p.baseline == plan::Assignment{{std::string(plan::kRevAxis), "mine"}});

  // Without a revision called bad, bad is new, and excluded where the plan excludes tested.
  user = parse(
      "experiment: b\ndoc: B.md\nrevisions: {base: main, mine: HEAD}\naxes: {size: [small, large]}\n"
      "exclude: [{rev: mine, size: large}]\n");
  p = experiment::bisect_plan(user, names);
  CHECK(names == std::array<std::string, 3>{"base", "mine", "bad"});
  REQUIRE(p.exclude.size() == 2);
  CHECK(p.exclude.back() == plan::Assignment{{std::string(plan::kRevAxis), "bad"}, {"size", "large"}});

  // One revision only: tested is new too; a new name never takes a revision's.
  user = parse("experiment: b\ndoc: B.md\nrevisions: {tested: main}\n");
  p = experiment::bisect_plan(user, names);
  CHECK(names == std::array<std::string, 3>{"tested", "tested_2", "bad"});
}

TEST_CASE("steps_back: the trailing ~N and ^ steps, counted apart from what git resolves") {
  auto check = [](const std::string& spec, const std::string& base, int back) {
    const auto s = experiment::steps_back(spec);
    CHECK(s.base == base);
    CHECK(s.back == back);
  };
  check("main", "main", 0);
  check("HEAD~5", "HEAD", 5);
  check("HEAD~", "HEAD", 1);
  check("main^^", "main", 2);
  check("v1.2^1~2", "v1.2", 3);
  check("main~2^", "main", 3);
  check("main^2", "main^2", 0);  // a second parent is git's to resolve
  check("~3", "~3", 0);          // no revision: git says so
  check("a1b2c3d", "a1b2c3d", 0);
}

TEST_CASE("judgements: a side or step 0's confirmation, and what the search learns from each") {
  CHECK(experiment::judgement_of(stats::Side::bad) == Judgement::bad);
  CHECK(experiment::judgement_of(stats::Side::good) == Judgement::good);
  CHECK(experiment::judgement_of(stats::Side::undecided) == Judgement::undecided);
  CHECK(experiment::judgement_of(stats::Confirmation::worse) == Judgement::bad);
  CHECK(experiment::judgement_of(stats::Confirmation::not_worse) == Judgement::good);
  CHECK(experiment::judgement_of(stats::Confirmation::undecided) == Judgement::undecided);
  for (auto j : {Judgement::good, Judgement::bad, Judgement::skip, Judgement::undecided})
    CHECK(experiment::parse_judgement(std::string(experiment::to_string(j))) == j);
  CHECK(experiment::parse_judgement("what") == Judgement::skip);
  CHECK(!experiment::side_of(Judgement::skip));
  CHECK(experiment::side_of(Judgement::undecided) == stats::Side::undecided);
}

TEST_CASE("the search: the next commit to probe, and the status each step leaves") {
  // 8 commits c0..c7 (c7 bad): step 1 probes the middle.
  auto st = state(8, {});
  auto search = experiment::search_of(st);
  REQUIRE(search.pick());
  CHECK(*search.pick() == 3);
  CHECK(experiment::expected_steps(search, 1) == 3);
  CHECK(experiment::status_after(search, Judgement::bad) == "measuring");

  // c3 like good, c5 like bad, c4 like bad: c4 is the first bad commit.
  st = state(8, {{3, Judgement::good}, {5, Judgement::bad}, {4, Judgement::bad}});
  search = experiment::search_of(st);
  CHECK(!search.pick());
  CHECK(search.found());
  CHECK(search.hi == 4);
  CHECK(experiment::status_after(search, Judgement::bad) == "found");

  // A skipped commit leaves a range; an undecided step ends the bisect undecided.
  st = state(4, {{1, Judgement::good}, {2, Judgement::skip}});
  search = experiment::search_of(st);
  CHECK(!search.pick());
  CHECK(!search.found());
  CHECK(experiment::status_after(search, Judgement::skip) == "range");
  st = state(8, {{3, Judgement::undecided}});
  search = experiment::search_of(st);
  CHECK(experiment::status_after(search, Judgement::undecided) == "undecided");
}

TEST_CASE("the committed state: bisect.json reads back as it was written, and a step off the path is refused") {
  experiment::Bisect b;
  b.plan = parse("experiment: b\ndoc: B.md\naxes: {size: [small]}\n");
  b.names = {"good", "tested", "bad"};
  b.metric = b.plan.metrics.front();
  auto st = state(8, {{3, Judgement::good}, {5, Judgement::skip}});
  st.left_out = 4;
  st.steps[1].summary = {{"rounds", 6}, {"invocations", 18}, {"seconds", 1.5}};
  st.steps[1].runs = nlohmann::json::array({{{"rev", "tested"}}});
  const auto j = experiment::to_json(st, b);
  CHECK(j["path"].size() == 8);
  const auto back = experiment::parse_state(j.dump(1), "bisect.json");
  CHECK(back.id == st.id);
  CHECK(back.good == st.good);
  CHECK(back.bad_spec == st.bad_spec);
  CHECK(back.path == st.path);
  CHECK(back.left_out == 4);
  CHECK(back.status == "measuring");
  REQUIRE(back.steps.size() == 3);
  CHECK(back.steps[1].like == Judgement::good);
  CHECK(back.steps[2].like == Judgement::skip);
  CHECK(back.steps[1].summary == st.steps[1].summary);
  CHECK(back.steps[1].runs == st.steps[1].runs);
  CHECK(experiment::to_json(back, b) == j);

  auto off = j;
  off["steps"][1]["commit"] = "c4";  // not the commit at its index
  CHECK_THROWS_AS(experiment::parse_state(off.dump(), "bisect.json"), Error);
  CHECK_THROWS_AS(experiment::parse_state("{", "bisect.json"), Error);
}

TEST_CASE("the budget: none allows anything; a limit allows what the mean cost so far fits") {
  experiment::Budget unlimited(std::nullopt);
  unlimited.spent(100, 1e6);
  CHECK(unlimited.allows(1000));

  experiment::Budget budget(3600.0);
  CHECK(budget.allows(1000000));  // nothing spent: no cost to go by
  budget.spent(10, 100.0);        // 10 s an invocation
  CHECK(budget.allows(300));
  CHECK(!budget.allows(400));
  experiment::Budget spent(0.0);
  CHECK(!spent.allows(1));
}
