#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <filesystem>

#include "plan/load.hpp"
#include "record/compare.hpp"
#include "runner/environment.hpp"

using namespace abtrack;

namespace {

plan::Plan two_cells() {
  return plan::parse_plan(
      "experiment: e\ndoc: d.md\naxes: {v: [a, b]}\nbaseline: {v: a}\ncommand: x\n"
      "metrics: {t: {json: t, better: lower}, err: {json: err}}\ngates: [err < 1]\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
}

record::Record rec(int run, const std::string& v, const std::string& code, runner::Outcome o, std::vector<double> t) {
  record::Record r;
  r.experiment = "e";
  r.run = run;
  r.cell = {{"v", v}};
  r.code.commit = code;
  r.data.outcome = o;
  r.data.samples["t"] = std::move(t);
  return r;
}

}  // namespace

TEST_CASE("a cell pools the samples of its runs on the latest code, new code starts a new pool") {
  auto p = two_cells();
  std::string c1(40, '1'), c2(40, '2');
  std::vector<record::Record> rs{
      rec(1, "a", c1, runner::Outcome::pass, {1, 2}), rec(2, "a", c1, runner::Outcome::pass, {3}),
      rec(3, "b", c1, runner::Outcome::pass, {9}), rec(4, "a", c2, runner::Outcome::pass, {5}),
      rec(5, "a", c2, runner::Outcome::invalid, {})};
  auto cells = record::cells_with_runs(p, rs);
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].runs.size() == 4);
  CHECK(cells[0].pool().size() == 2);  // runs 4 and 5 (code c2)
  CHECK(cells[0].pooled_samples()["t"] == std::vector<double>{5});
  // The invalid latest run measured nothing: run 4, valid on the same code, decides.
  CHECK(cells[0].outcome() == runner::Outcome::pass);
  CHECK(cells[0].deciding()->run == 4);
  CHECK(cells[1].pooled_samples()["t"] == std::vector<double>{9});
}

TEST_CASE("an invalid latest run leaves the pool to the earlier valid runs on its code, and only those") {
  auto p = two_cells();
  std::string c1(40, '1'), c2(40, '2');
  SUBCASE("earlier valid runs on the same code decide, and give the baseline's samples") {
    std::vector<record::Record> rs{rec(1, "a", c1, runner::Outcome::pass, {1, 2, 3, 4, 5}),
                                   rec(2, "b", c1, runner::Outcome::pass, {2, 3, 4, 5, 6}),
                                   rec(3, "a", c1, runner::Outcome::invalid, {})};
    auto cells = record::cells_with_runs(p, rs);
    CHECK(cells[0].outcome() == runner::Outcome::pass);
    CHECK(cells[0].latest()->run == 3);  // the latest run is still the invalid one
    CHECK(cells[0].pooled_samples()["t"].size() == 5);
    auto c = record::compare_with_baseline(p, cells[0], rs[1].data.samples);
    CHECK(c.metrics.size() == 1);
    CHECK(c.notes.empty());
  }
  SUBCASE("valid runs only on other code do not: the cell is invalid") {
    std::vector<record::Record> rs{rec(1, "a", c1, runner::Outcome::pass, {1}),
                                   rec(2, "a", c2, runner::Outcome::invalid, {})};
    auto cells = record::cells_with_runs(p, rs);
    CHECK(cells[0].outcome() == runner::Outcome::invalid);
    CHECK(cells[0].deciding()->run == 2);
    CHECK(cells[0].pooled_samples().empty());
  }
  SUBCASE("a failed run of the pool still fails the cell") {
    std::vector<record::Record> rs{rec(1, "a", c1, runner::Outcome::fail, {1}),
                                   rec(2, "a", c1, runner::Outcome::pass, {1}),
                                   rec(3, "a", c1, runner::Outcome::invalid, {})};
    auto cells = record::cells_with_runs(p, rs);
    CHECK(cells[0].outcome() == runner::Outcome::fail);
    CHECK(cells[0].deciding()->run == 1);
  }
}

TEST_CASE("a run on another kind of GPU starts a new pool; another host or count of cards does not") {
  auto p = two_cells();
  std::string c(40, '1');
  auto on = [](record::Record r, std::string host, std::vector<std::string> gpus) {
    r.env.host = std::move(host);
    for (auto& g : gpus) r.env.gpus.push_back(runner::Gpu{std::move(g)});
    return r;
  };
  std::vector<record::Record> rs{on(rec(1, "a", c, runner::Outcome::pass, {1}), "n1", {"NVIDIA H100 80GB HBM3"}),
                                 on(rec(2, "a", c, runner::Outcome::pass, {2}), "n2", {"NVIDIA H200"}),
                                 on(rec(3, "a", c, runner::Outcome::pass, {3}), "n3", {"NVIDIA H200", "NVIDIA H200"}),
                                 on(rec(4, "a", c, runner::Outcome::pass, {4}), "n1", {"NVIDIA H100 80GB HBM3"})};
  CHECK(runner::describe_kinds(record::gpu_kinds(rs[2])) == "NVIDIA H200");
  CHECK(runner::describe_kinds(record::gpu_kinds(record::Record{})) == "no GPU");
  CHECK(record::same_pool(rs[1], rs[2]));
  CHECK_FALSE(record::same_pool(rs[0], rs[1]));
  auto cells = record::cells_with_runs(p, rs);
  CHECK(cells[0].pooled_samples()["t"] == std::vector<double>{1, 4});  // the H100 runs, not the H200 ones
  rs.pop_back();
  cells = record::cells_with_runs(p, rs);
  CHECK(cells[0].pooled_samples()["t"] == std::vector<double>{2, 3});  // one H200 or two, on any host
}

TEST_CASE("on a host with two kinds of GPU, a run's kind is the card its command saw") {
  std::string c(40, '1');
  auto on = [&](int run, unsigned seen) {
    auto r = rec(run, "a", c, runner::Outcome::pass, {1});
    r.env.gpus = {runner::Gpu{"NVIDIA RTX 6000 Ada Generation", "GPU-0"}, runner::Gpu{"NVIDIA H100 PCIe", "GPU-1"}};
    runner::Invocation inv;
    runner::Watch w;
    w.nvml = true;
    w.gpus.push_back(runner::GpuWatch{seen});
    inv.watch = std::move(w);
    r.data.invocations.push_back(std::move(inv));
    return r;
  };
  auto a = on(1, 1), b = on(2, 0), c1 = on(3, 1);
  CHECK(record::gpu_kinds(a) == std::set<std::string>{"NVIDIA H100 PCIe"});
  CHECK_FALSE(record::same_pool(a, b));
  CHECK(record::same_pool(a, c1));
  // By UUID when the watch has one: NVML's index 1 is env.gpus' first when device 0 could not
  // be read.
  auto d = on(4, 1);
  d.env.gpus.erase(d.env.gpus.begin());
  d.data.invocations.front().watch->gpus.front().uuid = "GPU-1";
  CHECK(record::gpu_kinds(d) == std::set<std::string>{"NVIDIA H100 PCIe"});
  // Not watched (no NVML): every GPU of the machine.
  b.data.invocations.front().watch->nvml = false;
  CHECK(record::gpu_kinds(b).size() == 2);
}

TEST_CASE("a run on unknown code (dirty, no snapshot) pools with no other run") {
  auto p = two_cells();
  std::string c(40, '1');
  std::vector<record::Record> rs{rec(1, "a", c, runner::Outcome::pass, {1}), rec(2, "a", c, runner::Outcome::pass, {2}),
                                 rec(3, "a", c, runner::Outcome::pass, {3})};
  rs[1].code.dirty = true;  // the snapshot failed
  CHECK(rs[1].code.unknown());
  CHECK(rs[1].code.trailer() == c + " +dirty");
  CHECK_FALSE(rs[0].code.same_identity(rs[1].code));
  CHECK_FALSE(rs[1].code.same_identity(rs[1].code));
  auto cells = record::cells_with_runs(p, rs);
  CHECK(cells[0].pooled_samples()["t"] == std::vector<double>{1, 3});  // run 3 pools with run 1, not 2
  rs.pop_back();
  cells = record::cells_with_runs(p, rs);
  CHECK(cells[0].pool().size() == 1);  // the latest run on unknown code: its own pool
  CHECK(cells[0].pooled_samples()["t"] == std::vector<double>{2});
  rs[1].code.snapshot = std::string(40, 's');  // a snapshot names the code again
  CHECK(rs[1].code.trailer() == c + " +snapshot " + rs[1].code.snapshot);
}

TEST_CASE("a failed run anywhere in the pool fails the cell") {
  auto p = two_cells();
  std::string c(40, '1');
  std::vector<record::Record> rs{rec(1, "b", c, runner::Outcome::fail, {1}),
                                 rec(2, "b", c, runner::Outcome::pass, {2})};
  auto cells = record::cells_with_runs(p, rs);
  CHECK(cells[1].outcome() == runner::Outcome::fail);
  CHECK(cells[1].deciding()->run == 1);
  CHECK(cells[1].pooled_samples()["t"] == std::vector<double>{1, 2});
}

TEST_CASE("comparison against the baseline pool, uncomparable metrics are noted, not thrown") {
  auto p = two_cells();
  std::string c(40, '1');
  std::vector<double> base, fast;
  for (int i = 0; i < 20; ++i) {
    base.push_back(100 + (i * 7) % 5);
    fast.push_back(90 + (i * 3) % 5);
  }
  std::vector<record::Record> rs{rec(1, "a", c, runner::Outcome::pass, base)};
  auto cells = record::cells_with_runs(p, rs);
  auto cmp = record::compare_with_baseline(p, cells[0], {{"t", fast}});
  REQUIRE(cmp.metrics.size() == 1);
  CHECK(cmp.baseline_run == 1);
  CHECK(cmp.metrics[0].result.verdict == stats::Verdict::better);
  CHECK(cmp.metrics[0].result.delta_pct == doctest::Approx(-10.0).epsilon(0.02));
  // Zeros have no ratio: the change is absolute (B - A), not a note.
  auto zeros = record::compare_with_baseline(p, cells[0], {{"t", {0, 0, 0}}});
  REQUIRE(zeros.metrics.size() == 1);
  CHECK(zeros.metrics[0].result.absolute);
  CHECK(zeros.notes.empty());
  auto none = record::compare_with_baseline(p, cells[0], {{"t", {std::nan("")}}});
  CHECK(none.metrics.empty());
  REQUIRE(none.notes.size() == 1);
  CHECK(none.notes[0].starts_with("t: not compared:"));
  auto missing = record::compare_with_baseline(p, cells[0], {});
  REQUIRE(missing.notes.size() == 1);
  CHECK(missing.notes[0] == "t: no samples on this side");
}

TEST_CASE("cells_with_runs files each record under the cell plan_cell gives it, and skips the others") {
  auto p = plan::parse_plan(
      "experiment: e\ndoc: d.md\naxes: {w: [4, 8], b: [1, 2, 3]}\nexclude: [{w: 8, b: 3}]\n"
      "command: x\nmetrics: {t: {json: t}}\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
  auto at = [](int run, record::CellValues cell, std::string experiment = "e") {
    record::Record r;
    r.experiment = std::move(experiment);
    r.run = run;
    r.cell = std::move(cell);
    return r;
  };
  std::vector<record::Record> rs{
      at(1, {{"w", "8"}, {"b", "2"}}),
      at(2, {{"b", "1"}, {"w", "4"}}),              // keys in another order: still cell w=4 b=1
      at(3, {{"w", "8"}, {"b", "3"}}),              // an excluded cell
      at(4, {{"w", "16"}, {"b", "1"}}),             // a value the plan no longer has
      at(5, {{"w", "4"}}),                          // an axis missing
      at(6, {{"w", "4"}, {"b", "1"}, {"x", "1"}}),  // an axis the plan does not have
      at(7, {{"w", "4"}, {"w", "8"}}),              // the same axis twice, b missing
      at(8, {{"w", "4"}, {"b", "1"}}, "other"),     // another experiment
      at(9, {{"w", "4"}, {"b", "1"}}),
      at(10, {{"w", "8"}, {"b", "2"}}),
  };
  auto cells = record::cells_with_runs(p, rs);
  REQUIRE(cells.size() == 5);
  for (const auto& c : cells) {
    std::vector<int> runs, expected;
    for (const auto* r : c.runs) runs.push_back(r->run);
    // The slow definition: every record of the experiment whose plan_cell is this cell.
    for (const auto& r : rs)
      if (r.experiment == "e")
        if (auto pc = record::plan_cell(p, r.cell); pc && *pc == c.cell) expected.push_back(r.run);
    CHECK(runs == expected);
  }
  CHECK(cells[0].runs.size() == 2);  // w=4 b=1: runs 2 and 9
  CHECK(cells[4].runs.size() == 2);  // w=8 b=2: runs 1 and 10
  // A record's header, as a step reads it from the cache, is located in the same cell.
  record::CellLocator locator(p);
  for (const auto& r : rs) {
    std::string frame = record::encode_frame("oid", r);
    record::HeaderView h;
    record::decode_header(std::string_view(frame).substr(8), h);
    auto pc = r.experiment == "e" ? record::plan_cell(p, r.cell) : std::nullopt;
    bool in_plan = pc && std::find(locator.cells().begin(), locator.cells().end(), *pc) != locator.cells().end();
    auto found = locator.find(h);
    CHECK(found == locator.find(r));
    CHECK(found.has_value() == in_plan);
    if (found && pc) CHECK(locator.cells()[*found] == *pc);
  }
}
