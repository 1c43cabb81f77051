// `abtrack check`'s judgement: a cell's previous code's pool, the tally of what fails the check,
// and why a check that fails nothing compared nothing.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "doc/render.hpp"
#include "experiment/check.hpp"
#include "plan/load.hpp"
#include "record/compare.hpp"

using namespace abtrack;
using runner::Outcome;

namespace {

plan::Plan two_cells(const std::string& baseline = "baseline: {v: a}\n") {
  return plan::parse_plan("experiment: e\ndoc: d.md\naxes: {v: [a, b]}\n" + baseline +
                              "command: x\nmetrics: {t: {json: t, better: lower}}\n",
                          "abtrack.yaml", std::filesystem::temp_directory_path());
}

// A run of experiment e: its number, cell v=`v`, code (a commit id of `code` repeated), outcome
// and samples of t.
struct Run {
  int run;
  std::string v;
  char code;
  Outcome outcome;
  std::vector<double> t;
};

std::vector<record::Record> records(const std::vector<Run>& runs) {
  std::vector<record::Record> out(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out[i].experiment = "e";
    out[i].run = runs[i].run;
    out[i].cell = {{"v", runs[i].v}};
    out[i].code.commit = std::string(40, runs[i].code);
    out[i].data.outcome = runs[i].outcome;
    out[i].data.samples["t"] = runs[i].t;
  }
  return out;
}

std::vector<double> around(double level) {
  std::vector<double> out;
  for (int i = 0; i < 12; ++i) out.push_back(level * (1 + 0.001 * (i % 4)));
  return out;
}

}  // namespace

TEST_CASE("previous_pool: the runs on the code before the latest code, none without earlier code") {
  const auto p = two_cells();
  const auto rs = records({{1, "a", '1', Outcome::pass, {1}},
                           {2, "a", '2', Outcome::pass, {2}},
                           {3, "a", '2', Outcome::pass, {3}},
                           {4, "a", '3', Outcome::pass, {4}},
                           {5, "b", '1', Outcome::pass, {5}}});
  const auto cells = record::cells_with_runs(p, rs);
  const auto before = experiment::previous_pool(cells[0]);
  REQUIRE(before.runs.size() == 2);
  CHECK(before.runs[0]->run == 2);
  CHECK(before.runs[1]->run == 3);
  CHECK(before.pool().size() == 2);
  CHECK(experiment::previous_pool(cells[1]).runs.empty());
}

TEST_CASE("previous_pool: the earlier code on the latest run's card; the same code on another card is not it") {
  const auto p = two_cells();
  auto rs = records({{1, "a", '1', Outcome::pass, {1}},
                     {2, "a", '1', Outcome::pass, {2}},
                     {3, "a", '2', Outcome::pass, {3}},
                     {4, "a", '2', Outcome::pass, {4}}});
  const char* gpu[] = {"NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H200"};
  for (std::size_t i = 0; i < rs.size(); ++i) rs[i].env.gpus.push_back(runner::Gpu{gpu[i]});
  auto cells = record::cells_with_runs(p, rs);
  REQUIRE(cells[0].pool().size() == 1);  // code 2 on the H200: run 4 alone
  auto before = experiment::previous_pool(cells[0]);
  REQUIRE(before.runs.size() == 1);
  CHECK(before.runs[0]->run == 1);  // code 1 on the H200, not code 2 on the H100 (run 3)
  rs[0].env.gpus[0].name = "NVIDIA H100 80GB HBM3";
  cells = record::cells_with_runs(p, rs);
  CHECK(experiment::previous_pool(cells[0]).runs.empty());  // no earlier code on the H200
}

TEST_CASE("tally_check: worse, failed and invalid cells fail the check; pending ones do not") {
  const auto p = two_cells();
  auto rs = records({{1, "a", '1', Outcome::pass, around(10)}, {2, "b", '1', Outcome::pass, around(20)}});
  auto cells = record::cells_with_runs(p, rs);
  std::size_t with_p = 0;
  auto comps = doc::compare_cells(p, cells, with_p);
  const auto metrics = record::compared_metrics(p);
  auto t = experiment::tally_check(p, cells, comps, metrics);
  CHECK(t.worse == std::vector<std::string>{"v=b"});
  CHECK(t.failed.empty());
  CHECK(t.invalid.empty());
  CHECK(t.compared == 1);
  CHECK(t.failing());
  CHECK(!experiment::nothing_compared(p, false, t, cells.size()));

  // b's latest run invalid: not compared, and the check fails on it.
  rs.push_back(records({{3, "b", '1', Outcome::invalid, {}}}).front());
  rs[1].data.outcome = Outcome::invalid;
  cells = record::cells_with_runs(p, rs);
  comps = doc::compare_cells(p, cells, with_p);
  t = experiment::tally_check(p, cells, comps, metrics);
  CHECK(t.worse.empty());
  CHECK(t.invalid == std::vector<std::string>{"v=b"});
  CHECK(t.failing());
}

TEST_CASE("nothing_compared: a check that fails nothing but compared nothing says why") {
  const auto p = two_cells();
  const auto metrics = record::compared_metrics(p);
  auto judge = [&](const std::vector<Run>& runs, bool history) {
    const auto rs = records(runs);
    const auto cells = record::cells_with_runs(p, rs);
    std::size_t with_p = 0;
    const auto comps = doc::compare_cells(p, cells, with_p);
    return experiment::nothing_compared(p, history, experiment::tally_check(p, cells, comps, metrics), cells.size());
  };
  auto n = judge({}, false);
  REQUIRE(n);
  CHECK(n->what == "no cell has a run");
  CHECK(n->advice == "measure them first: abtrack run");
  n = judge({{1, "b", '1', Outcome::pass, around(10)}}, false);
  REQUIRE(n);
  CHECK(n->what == "the baseline v=a has no runs");
  n = judge({{1, "a", '1', Outcome::pass, around(10)}}, false);
  REQUIRE(n);
  CHECK(n->what == "no cell but the baseline has a run to compare");
  n = judge({{1, "a", '1', Outcome::pass, around(10)}}, true);
  REQUIRE(n);
  CHECK(n->what == "no cell has runs on earlier code");
  CHECK(!judge({{1, "a", '1', Outcome::pass, around(10)}, {2, "b", '1', Outcome::pass, around(10)}}, false));

  // Without a baseline a check only checks gates and invalid runs: nothing when no cell ran.
  const auto plain = two_cells("");
  const auto one = records({{1, "a", '1', Outcome::pass, {1}}});
  const auto cells = record::cells_with_runs(plain, one);
  std::size_t with_p = 0;
  const auto comps = doc::compare_cells(plain, cells, with_p);
  CHECK(!experiment::nothing_compared(
      plain, false, experiment::tally_check(plain, cells, comps, record::compared_metrics(plain)), cells.size()));
}
