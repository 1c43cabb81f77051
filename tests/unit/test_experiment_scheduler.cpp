// The scheduler (run_serial, run_parallel) driven through a fake executor and a Progress that
// records what it is told: no process is spawned. The runs are committed for real, in a scratch
// repository (libgit2), except where `commit = false` measures only, as bisect does.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "experiment/commit_run.hpp"
#include "experiment/context.hpp"
#include "experiment/rounds.hpp"
#include "experiment/scheduler.hpp"
#include "git_scratch.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

// What the fake processes do: the commands in the order they came (with the GPU they were
// given), and an answer for each.
struct Script {
  std::mutex mutex;
  std::vector<std::string> commands;
  std::vector<std::string> gpus;
  std::function<util::ProcessResult(const std::string& command)> answer;
};

class FakeExecutor final : public runner::Executor {
 public:
  FakeExecutor(Script& script, std::string gpu) : m_script(script), m_gpu(std::move(gpu)) {}
  util::ProcessResult execute(const util::ProcessSpec& spec) override {
    std::lock_guard lock(m_script.mutex);
    m_script.commands.push_back(spec.shell_command);
    m_script.gpus.push_back(m_gpu);
    return m_script.answer(spec.shell_command);
  }

 private:
  Script& m_script;
  std::string m_gpu;
};

experiment::ExecutorFactory fake_executors(Script& script) {
  return [&script](const std::string& gpu, util::OutputFn) { return std::make_unique<FakeExecutor>(script, gpu); };
}

util::ProcessResult exited(int code, std::string out, std::string err = {}) {
  util::ProcessResult r;
  r.exit_code = code;
  r.duration_s = 0.01;
  r.out_bytes = out.size();
  r.err_bytes = err.size();
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

// The cell's value in a command "bench X" (X as the plan's substitution quotes it).
std::string value_in(const std::string& command) {
  std::string v = command.substr(command.rfind(' ') + 1);
  std::erase(v, '\'');
  return v;
}

// `bench N` prints {"t": [10 N, 10 N + 1]}.
util::ProcessResult bench(const std::string& command) {
  const int x = std::stoi(value_in(command));
  return exited(0, fmt::format("{{\"t\": [{}, {}]}}\n", 10 * x, 10 * x + 1));
}

// Everything the engine tells people, in order.
struct Recorder final : experiment::Progress {
  std::vector<std::string> infos, warnings, printed, results, cells;
  std::vector<std::size_t> totals;
  int measured = 0;
  bool shown = false;

  void info(const std::string& message) override { infos.push_back(message); }
  void warn(const std::string& message) override { warnings.push_back(message); }
  void print(const std::string& text) override { printed.push_back(text); }
  void result(const std::string& line, const record::Record&) override { results.push_back(line); }
  util::OutputFn command_output(const std::string&) override { return {}; }
  void cells_started(std::size_t total) override {
    totals.push_back(total);
    shown = true;
  }
  void cell_started(std::size_t, const std::string& label) override { cells.push_back(label); }
  void invocation_started(int, int) override {}
  void cell_measured() override { ++measured; }
  void cells_done() override { shown = false; }
};

// A scratch repository whose first commit holds `plan` as abtrack.yaml, and its Context, opened
// as a command opens it (from the repository's folder); the fake processes' script, and what
// the engine told.
struct Bench {
  GitScratch git{"scheduler"};
  Recorder progress;
  Script script;
  std::optional<experiment::Context> ctx;

  explicit Bench(const std::string& plan) {
    std::ofstream(git.dir / "abtrack.yaml") << plan;
    REQUIRE(git.git("add abtrack.yaml"));
    REQUIRE(git.git("commit -q -m plan"));
    const fs::path here = fs::current_path();
    fs::current_path(git.dir);
    try {
      ctx.emplace(experiment::open_context(std::nullopt, progress));
    } catch (...) {
      fs::current_path(here);
      throw;
    }
    fs::current_path(here);
  }

  // Options whose executors are the script's.
  experiment::RunOptions options() {
    experiment::RunOptions opts;
    opts.executors = fake_executors(script);
    return opts;
  }

  // The plan's cells in plan order, each once (no rounds).
  experiment::Scheduled once() const {
    experiment::Scheduled out;
    std::mt19937_64 rng(0);
    experiment::append_round(out, experiment::single_units(ctx->plan.cells()), 1, runner::Schedule{}, rng, false);
    return out;
  }

  // run_serial over once(); returns the worst exit code.
  int serial(const experiment::RunOptions& opts) {
    int worst = 0;
    experiment::run_serial(*ctx, progress, once(), false, opts, worst);
    return worst;
  }
};

const std::string kPlan = R"(experiment: sched
doc: AB.md
axes:
  x: [1, 2, 3]
baseline: {x: 1}
command: bench {x}
metrics:
  t: {json: t, better: lower}
)";

std::string labels(const std::vector<record::Record>& records) {
  std::string out;
  for (const auto& r : records) out += (out.empty() ? "" : " ") + r.label();
  return out;
}

}  // namespace

TEST_CASE("run_serial: rounds run in the schedule's order, one commit per run, results reported") {
  Bench b(kPlan);
  b.script.answer = bench;
  experiment::Scheduled schedule;
  std::mt19937_64 rng(7);
  const runner::Schedule base{1, 2, 7, 1, "00000000000000aa"};
  for (int r = 1; r <= 2; ++r)
    experiment::append_round(schedule, experiment::single_units(b.ctx->plan.cells()), r, base, rng, true);
  REQUIRE(schedule.size() == 6);

  auto opts = b.options();
  std::vector<record::Record> records;
  opts.records = &records;
  int worst = 0;
  experiment::run_serial(*b.ctx, b.progress, schedule, false, opts, worst);

  CHECK(worst == 0);
  REQUIRE(b.script.commands.size() == 6);
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    CHECK(value_in(b.script.commands[i]) == schedule[i].first.values.front());
    CHECK(records[i].run == static_cast<int>(i) + 1);
    CHECK(records[i].cell.front().second == schedule[i].first.values.front());
    REQUIRE(records[i].data.schedule);
    CHECK(records[i].data.schedule->round == schedule[i].second.round);
    CHECK(records[i].data.schedule->position == static_cast<int>(i) + 1);
    CHECK(records[i].data.schedule->batch == "00000000000000aa");
    CHECK(records[i].data.outcome == runner::Outcome::pass);
    CHECK(records[i].data.samples.at("t").size() == 2);
  }
  // Within a round, each cell once; the second round goes backwards through its shuffled units.
  std::set<std::string> first(b.script.commands.begin(), b.script.commands.begin() + 3);
  CHECK(first.size() == 3);
  // What was committed is what HEAD holds.
  CHECK(labels(experiment::head_records(*b.ctx)) == labels(records));
  // What people were told.
  CHECK(b.progress.totals == std::vector<std::size_t>{6});
  CHECK_FALSE(b.progress.shown);
  CHECK(b.progress.measured == 6);
  REQUIRE(b.progress.cells.size() == 6);
  CHECK(b.progress.cells[0] == "round 1/2 " + records[0].label());
  CHECK(b.progress.cells[5] == "round 2/2 " + records[5].label());
  REQUIRE(b.progress.results.size() == 6);
  CHECK(b.progress.results[0].starts_with("run 1 " + records[0].label() + ": pass  t "));
  CHECK(b.progress.warnings.empty());
}

TEST_CASE("run_serial: a timeout and an unreadable metric are invalid runs, a failed gate fails; exit 1") {
  Bench b(kPlan + "gates:\n  - t <= 25\n");
  b.script.answer = [](const std::string& command) {
    if (value_in(command) == "1") {
      util::ProcessResult r;
      r.timed_out = true;
      r.signal = 15;
      return r;
    }
    if (value_in(command) == "2") return exited(0, "no numbers here\n");
    return bench(command);  // t = 30, 31: above the gate
  };
  auto opts = b.options();
  opts.commit = false;  // measured only, as bisect measures
  std::vector<record::Record> records;
  opts.records = &records;
  const int worst = b.serial(opts);

  CHECK(worst == static_cast<int>(Exit::run_failed));
  REQUIRE(records.size() == 3);
  CHECK(records[0].data.outcome == runner::Outcome::invalid);
  CHECK(records[0].data.reason == "command timed out after 600 s");
  CHECK(records[1].data.outcome == runner::Outcome::invalid);
  CHECK(records[1].data.reason.find("'t'") != std::string::npos);
  CHECK(records[2].data.outcome == runner::Outcome::fail);
  REQUIRE(records[2].data.gates.size() == 1);
  CHECK_FALSE(records[2].data.gates[0].holds);
  // Nothing committed: drafts (run 0), and HEAD has no record.
  CHECK(std::all_of(records.begin(), records.end(), [](const record::Record& r) { return r.run == 0; }));
  CHECK(experiment::head_records(*b.ctx).empty());
  REQUIRE(b.progress.results.size() == 3);
  CHECK(b.progress.results[0] == "measured x=1: invalid  — command timed out after 600 s");
  CHECK(b.progress.results[2].starts_with("measured x=3: fail  t 30"));
}

TEST_CASE("run_serial: results as info, and a setup that fails makes every run invalid without running it") {
  Bench b(kPlan + "setup: make\n");
  b.script.answer = [](const std::string& command) {
    return command == "make" ? exited(2, "", "make: *** no rule\n") : bench(command);
  };
  auto opts = b.options();
  opts.results_as_info = true;
  const int worst = b.serial(opts);

  CHECK(b.script.commands == std::vector<std::string>{"make"});  // the setup, once; no cell ran
  CHECK(worst == static_cast<int>(Exit::run_failed));
  REQUIRE(b.progress.warnings.size() == 1);
  CHECK(b.progress.warnings[0] == "setup exited with status 2; every run of this invocation is recorded as invalid");
  CHECK(b.progress.results.empty());
  REQUIRE(b.progress.infos.size() == 4);
  CHECK(b.progress.infos[0] == "setup: make");
  CHECK(b.progress.infos[1] == "run 1 x=1: invalid  — setup exited with status 2");
  CHECK(experiment::head_records(*b.ctx).size() == 3);
}

TEST_CASE("run_serial: the first runs invalid alike stop the rest (early stop)") {
  Bench b(kPlan);
  b.script.answer = [](const std::string&) { return exited(127, "", "sh: 1: bench: not found\n"); };
  auto opts = b.options();
  opts.commit = false;
  opts.early_stop = true;
  try {
    b.serial(opts);
    FAIL("no early stop");
  } catch (const Error& e) {
    CHECK(e.code() == Exit::run_failed);
    CHECK(
        e.diagnostics().front().message ==
        "stopped after the first 2 runs, all invalid alike: command exited with status 127 (command not found?): sh: 1: bench: not found");
  }
  CHECK(b.script.commands.size() == 2);
  CHECK_FALSE(b.progress.shown);  // the cells' progress ends with the error too
}

TEST_CASE("run_serial: an interrupt names what became of the cell") {
  Bench b(kPlan);
  b.script.answer = [](const std::string& command) -> util::ProcessResult {
    if (value_in(command) == "2") throw Interrupted("interrupted by SIGINT");
    return bench(command);
  };
  try {
    b.serial(b.options());
    FAIL("no interrupt");
  } catch (const Error& e) {
    CHECK(e.code() == Exit::interrupted);
    CHECK(e.diagnostics().front().message ==
          "interrupted by SIGINT while running x=2; nothing was recorded for it: x=2 is still pending");
  }
  CHECK(labels(experiment::head_records(*b.ctx)) == "x=1");  // the cell before it is committed
}

TEST_CASE("run_parallel: each running cell on a GPU of its own, committed in schedule order") {
  Bench b(R"(experiment: par
doc: AB.md
axes:
  x: [1, 2, 3, 4]
gpus: ["0", "1"]
command: bench {x}
metrics:
  t: {json: t, better: lower}
)");
  b.script.answer = bench;
  auto opts = b.options();
  std::vector<record::Record> records;
  opts.records = &records;
  int worst = 0;
  experiment::run_parallel(*b.ctx, b.progress, b.once(), 4, false, opts, worst);  // at most one cell per GPU

  CHECK(worst == 0);
  CHECK(labels(records) == "x=1 x=2 x=3 x=4");
  CHECK(labels(experiment::head_records(*b.ctx)) == "x=1 x=2 x=3 x=4");
  std::map<std::string, int> per_gpu;
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].run == static_cast<int>(i) + 1);
    REQUIRE(records[i].data.placement);
    per_gpu[records[i].data.placement->gpu]++;
  }
  CHECK(per_gpu.size() == 2);
  CHECK(per_gpu.count("0") == 1);
  CHECK(per_gpu.count("1") == 1);
  REQUIRE(b.script.gpus.size() == 4);
  CHECK(std::all_of(b.script.gpus.begin(), b.script.gpus.end(),
                    [](const std::string& g) { return g == "0" || g == "1"; }));
  // Each cell's start is info (there is no line of cells side by side); the results in order.
  REQUIRE(b.progress.infos.size() == 4);
  CHECK(b.progress.infos[0] == "[1/4] x=1 (gpu 0)");
  CHECK(b.progress.infos[1] == "[2/4] x=2 (gpu 1)");
  CHECK(b.progress.totals.empty());
  REQUIRE(b.progress.results.size() == 4);
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(b.progress.results[i].starts_with(fmt::format("run {} x={}: pass", i + 1, i + 1)));
}
