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

record::Record rec(int run, const std::string& v, const std::string& code, Outcome o, std::vector<double> t) {
  record::Record r;
  r.experiment = "e";
  r.run = run;
  r.cell = {{"v", v}};
  r.code.commit = code;
  r.data.outcome = o;
  r.data.samples["t"] = std::move(t);
  return r;
}

std::vector<double> around(double level) {
  std::vector<double> out;
  for (int i = 0; i < 12; ++i) out.push_back(level * (1 + 0.001 * (i % 4)));
  return out;
}

}  // namespace

TEST_CASE("previous_pool: the runs on the code before the latest code, none without earlier code") {
  const auto p = two_cells();
  const std::string c1(40, '1'), c2(40, '2'), c3(40, '3');
  const std::vector<record::Record> rs{rec(1, "a", c1, Outcome::pass, {1}), rec(2, "a", c2, Outcome::pass, {2}),
                                       rec(3, "a", c2, Outcome::pass, {3}), rec(4, "a", c3, Outcome::pass, {4}),
                                       rec(5, "b", c1, Outcome::pass, {5})};
  const auto cells = record::cells_with_runs(p, rs);
  const auto before = experiment::previous_pool(cells[0]);
  REQUIRE(before.runs.size() == 2);
  CHECK(before.runs[0]->run == 2);
  CHECK(before.runs[1]->run == 3);
  CHECK(before.pool().size() == 2);
  CHECK(experiment::previous_pool(cells[1]).runs.empty());
}

TEST_CASE("tally_check: worse, failed and invalid cells fail the check; pending ones do not") {
  const auto p = two_cells();
  const std::string c1(40, '1');
  std::vector<record::Record> rs{rec(1, "a", c1, Outcome::pass, around(10)),
                                 rec(2, "b", c1, Outcome::pass, around(20))};
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
  rs.push_back(rec(3, "b", c1, Outcome::invalid, {}));
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
  const std::string c1(40, '1');
  const auto metrics = record::compared_metrics(p);
  auto judge = [&](const std::vector<record::Record>& rs, bool history) {
    const auto cells = record::cells_with_runs(p, rs);
    std::size_t with_p = 0;
    const auto comps = doc::compare_cells(p, cells, with_p);
    return experiment::nothing_compared(p, history, experiment::tally_check(p, cells, comps, metrics), cells.size());
  };
  auto n = judge({}, false);
  REQUIRE(n);
  CHECK(n->what == "no cell has a run");
  CHECK(n->advice == "measure them first: abtrack run");
  n = judge({rec(1, "b", c1, Outcome::pass, around(10))}, false);
  REQUIRE(n);
  CHECK(n->what == "the baseline v=a has no runs");
  n = judge({rec(1, "a", c1, Outcome::pass, around(10))}, false);
  REQUIRE(n);
  CHECK(n->what == "no cell but the baseline has a run to compare");
  n = judge({rec(1, "a", c1, Outcome::pass, around(10))}, true);
  REQUIRE(n);
  CHECK(n->what == "no cell has runs on earlier code");
  CHECK(!judge({rec(1, "a", c1, Outcome::pass, around(10)), rec(2, "b", c1, Outcome::pass, around(10))}, false));

  // Without a baseline a check only checks gates and invalid runs: nothing when no cell ran.
  const auto plain = two_cells("");
  const std::vector<record::Record> one{rec(1, "a", c1, Outcome::pass, {1})};
  const auto cells = record::cells_with_runs(plain, one);
  std::size_t with_p = 0;
  const auto comps = doc::compare_cells(plain, cells, with_p);
  CHECK(!experiment::nothing_compared(
      plain, false, experiment::tally_check(plain, cells, comps, record::compared_metrics(plain)), cells.size()));
}
