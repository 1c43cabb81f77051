// How a finished Slurm task becomes a run (runner::slurm::finished_run), from a result file and
// the task's Slurm state, without a cluster (tests/slurm/ runs the real one).
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "plan/load.hpp"
#include "runner/slurm.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("abtrack-slurm-unit-" + std::to_string(::getpid()));
  plan::Plan plan =
      plan::parse_plan("experiment: sl\ndoc: AB.md\naxes: {x: [1]}\ncommand: c\nmetrics: {t: {json: t}}\n",
                       "abtrack.yaml", fs::temp_directory_path());
  runner::slurm::Submission s;
  runner::slurm::Task t;
  Fixture() {
    fs::create_directories(dir);
    s.dir = dir;
    s.experiment = "sl";
    s.job_id = "42";
    t.index = 0;
    t.id = "m0";
    t.cell = {{"x", "1"}};
    t.command = "c";
    s.tasks = {t};
  }
  ~Fixture() { fs::remove_all(dir); }
  // A result whose only invocation exited 0 and printed the metric (the runner noted no signal).
  void clean_result() const {
    std::ofstream(dir / "result-0.json")
        << R"({"index": 0, "id": "m0", "stopped_by": "", "invocations": [{"exit_code": 0, "signal": null,)"
        << R"( "timed_out": false, "duration_s": 1, "stdout": "{\"t\": 1}\n", "stdout_bytes": 9,)"
        << R"( "stderr_tail": "", "stderr_bytes": 0}]})";
  }
  // A result whose only invocation ended by `signal`, with the runner's own stop note `stopped_by`.
  void result(int signal, const std::string& stopped_by) const {
    std::ofstream(dir / "result-0.json") << R"({"index": 0, "id": "m0", "stopped_by": ")" << stopped_by
                                         << R"(", "invocations": [{"exit_code": null, "signal": )" << signal
                                         << R"(, "timed_out": false, "duration_s": 1, "stdout": "", "stdout_bytes": 0,)"
                                         << R"( "stderr_tail": "", "stderr_bytes": 0}]})";
  }
};

}  // namespace

// The run finished_run makes of the fixture's task in Slurm state `state` (it must make one).
runner::Run finished(const Fixture& f, const std::string& state) {
  auto run = runner::slurm::finished_run(f.plan, f.s, f.t, {{0, state}});
  REQUIRE(run.has_value());
  return *run;
}

const char* const kCancelled = "slurm task 42_0 was cancelled (CANCELLED by 0, the command got SIGTERM)";

TEST_CASE("slurm: a command killed by scancel's SIGTERM before the runner noted its own is a cancelled run") {
  Fixture f;
  f.result(SIGTERM, "");
  // Slurm has not settled the task yet: wait for it to say why.
  CHECK_FALSE(runner::slurm::finished_run(f.plan, f.s, f.t, {{0, "RUNNING"}}).has_value());
  auto run = finished(f, "CANCELLED by 0");
  CHECK(run.outcome == runner::Outcome::invalid);
  CHECK(run.reason == kCancelled);
}

TEST_CASE("slurm: the runner's own stop note and a cancelled state give the same reason") {
  Fixture f;
  f.result(SIGTERM, "SIGTERM");
  CHECK(finished(f, "CANCELLED by 0").reason == kCancelled);
}

TEST_CASE("slurm: a command killed by SIGTERM in a task nobody cancelled keeps its own reason") {
  Fixture f;
  f.result(SIGTERM, "");
  auto reason = finished(f, "FAILED").reason;
  CHECK(reason.find("cancelled") == std::string::npos);
  CHECK(reason.find("SIGTERM") != std::string::npos);
}

// scancel signals a task's processes one by one: `sleep 60; echo ...` can print its line and exit
// 0 once its sleep is killed, before the runner notes its own signal (seen once in a CI-like run).
TEST_CASE("slurm: a command that finished as its task was cancelled is a cancelled run") {
  Fixture f;
  f.clean_result();
  auto run = finished(f, "CANCELLED by 0");
  CHECK(run.outcome == runner::Outcome::invalid);
  CHECK(run.reason == "slurm task 42_0 was cancelled (CANCELLED by 0) as its command finished");
  CHECK(run.samples.at("t") == std::vector<double>{1.0});  // what it printed stays in the record
}

TEST_CASE("slurm: after a cancel, a clean result waits for the task's Slurm state") {
  Fixture f;
  f.clean_result();
  // Nobody cancelled: the result is read at once, as before.
  CHECK(finished(f, "RUNNING").outcome == runner::Outcome::pass);
  std::ofstream(f.dir / "cancel-requested") << "42\n";
  CHECK(runner::slurm::cancel_requested(f.s));
  CHECK_FALSE(runner::slurm::finished_run(f.plan, f.s, f.t, {{0, "RUNNING"}}).has_value());
  CHECK_FALSE(runner::slurm::finished_run(f.plan, f.s, f.t, {{0, "COMPLETING"}}).has_value());
  // A task that had finished before the cancel keeps its result.
  CHECK(finished(f, "COMPLETED").outcome == runner::Outcome::pass);
  CHECK(finished(f, "CANCELLED").reason == "slurm task 42_0 was cancelled (CANCELLED) as its command finished");
  // squeue no longer knows the job: the result is all there is.
  auto run = runner::slurm::finished_run(f.plan, f.s, f.t, {});
  REQUIRE(run.has_value());
  CHECK(run->outcome == runner::Outcome::pass);
}

// The command's own failure is most likely the cancel's doing (seen in CI: a task's shell ended
// before its SIGTERM trap printed anything): the reason names the cancel first, then the failure.
TEST_CASE("slurm: a run that is invalid on its own in a cancelled task names the cancel, then its reason") {
  Fixture f;
  std::ofstream(f.dir / "result-0.json")
      << R"({"index": 0, "id": "m0", "stopped_by": "", "invocations": [{"exit_code": 3, "signal": null,)"
      << R"( "timed_out": false, "duration_s": 1, "stdout": "", "stdout_bytes": 0, "stderr_tail": "", "stderr_bytes": 0}]})";
  auto run = finished(f, "CANCELLED by 0");
  CHECK(run.outcome == runner::Outcome::invalid);
  CHECK(run.reason.rfind("slurm task 42_0 was cancelled (CANCELLED by 0) as its command finished (", 0) == 0);
  CHECK(run.reason.find("exited with status 3") != std::string::npos);
  // Nobody cancelled it: the failure is the whole reason.
  CHECK(finished(f, "COMPLETED").reason.rfind("slurm task", 0) == std::string::npos);
}

TEST_CASE("slurm: a submission folder whose manifest is half-written is not outstanding") {
  const fs::path base = fs::temp_directory_path() / ("abtrack-slurm-unit-base-" + std::to_string(::getpid()));
  fs::remove_all(base);
  for (const char* name : {"a-good", "b-half", "c-missing"}) {
    fs::create_directories(base / name);
    std::ofstream(base / name / "job_id") << "7\n";
  }
  std::ofstream(base / "a-good" / "manifest.json") << R"({"experiment": "sl", "tasks": []})";
  std::ofstream(base / "b-half" / "manifest.json") << R"({"experiment": "sl", "tas)";
  auto out = runner::slurm::outstanding(base, "sl");
  REQUIRE(out.size() == 1);
  CHECK(out[0].dir == base / "a-good");
  CHECK(out[0].job_id == "7");
  // The task side has nothing to fall back on: it says why it cannot read the manifest.
  try {
    runner::slurm::run_task(base / "c-missing", 0, "");
    FAIL("no exception");
  } catch (const Error& e) {
    const std::string manifest = (base / "c-missing" / "manifest.json").string();
    CHECK(e.code() == Exit::environment);
    CHECK(std::string(e.what()) ==
          "cannot read " + manifest + ": cannot read " + manifest + ": No such file or directory");
  }
  CHECK_THROWS_WITH_AS(runner::slurm::run_task(base / "b-half", 0, ""),
                       doctest::Contains("manifest.json: [json.exception.parse_error"), Error);
  fs::remove_all(base);
}
