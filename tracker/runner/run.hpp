#pragma once
// Running one cell of a plan: setup, the command's invocations, metrics, gates, outcome.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gates/gates.hpp"
#include "plan/plan.hpp"
#include "runner/environment.hpp"
#include "runner/watch.hpp"
#include "util/heap_optional.hpp"
#include "util/process.hpp"

namespace abtrack::runner {

// Where commands run. The local executor spawns processes; tests and later back-ends
// (slurm) provide their own.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one shell command to completion. Throws Error(environment) when it cannot start.
  virtual util::ProcessResult execute(const util::ProcessSpec& spec) = 0;
  // The same, watching the GPUs the command sees while it runs (watch.hpp) into `watch`.
  // By default nothing is watched: an executor that runs no command on this machine (a replay,
  // a test's fake) has nothing to watch.
  virtual util::ProcessResult execute_watched(const util::ProcessSpec& spec, util::HeapOptional<Watch>& watch) {
    (void)watch;
    return execute(spec);
  }
};

// Runs commands as local processes (util::run_process).
class LocalExecutor final : public Executor {
 public:
  util::ProcessResult execute(const util::ProcessSpec& spec) override;
  // Watches the GPUs of the spec's CUDA_VISIBLE_DEVICES (its last, as the command gets it),
  // else of this process's, else every GPU.
  util::ProcessResult execute_watched(const util::ProcessSpec& spec, util::HeapOptional<Watch>& watch) override;
};

enum class Outcome { pass, fail, invalid };
std::string_view to_string(Outcome o);

// What one invocation did, as the record keeps it (tails, not whole outputs).
struct Invocation {
  std::string command;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool timed_out = false;
  double duration_s = 0;
  std::uint64_t stdout_bytes = 0, stderr_bytes = 0;
  std::string stdout_tail, stderr_tail;
  util::HeapOptional<Watch> watch;  // the GPUs while it ran; none when not watched (setup, replays)
};

// Where a run sat in an `abtrack run --rounds R` schedule.
struct Schedule {
  int round = 1;  // 1-based
  int rounds = 1;
  std::uint64_t seed = 0;  // the shuffle's seed; the same seed gives the same order
  int position = 1;        // 1-based place in the whole schedule
  // The invocation that ran it (16 hex digits, drawn per `run`): runs of one batch and round
  // were measured side by side, so a cell and its baseline pair by round. Empty: not interleaved.
  std::string batch;
  // `rounds: auto`: the batch ran until its comparisons were decided (`rounds` is then its
  // max_rounds), so its comparisons are judged with the anytime-valid analysis.
  bool sequential = false;
};

// Where a run was measured, when it matters: a GPU handed out by `gpus:`, or a Slurm task.
struct Placement {
  std::string executor = "local";  // "local" or "slurm"
  std::string gpu;                 // the CUDA_VISIBLE_DEVICES it was given; empty: none
  std::string job_id;              // slurm: the array job id
  std::optional<int> array_index;  // slurm: the task's index in the array
  std::string node;                // slurm: the node that ran it
};

// The extra invocation of a cell's command under Nsight Compute that reads its `ncu:` metrics
// (runner/profile.hpp), one per distinct kernel:/launch: of them, after the timed invocations.
struct Profile {
  std::string command;               // the ncu command line as run; empty when ncu was not found
  std::string kernel;                // the `kernel:` regex with the cell's values; empty: any kernel
  int launch = 0;                    // which matching launch (ncu's --launch-skip)
  std::vector<std::string> metrics;  // the plan's metrics it reads
  // "ok"; "incomplete" (a metric without a value); not measured: "missing" (no ncu),
  // "no-permission" (no access to the counters), "no-kernel", "timed-out", "failed".
  std::string status = "ok";
  std::string message;  // why it is not ok, for people
  std::optional<int> exit_code;
  double duration_s = 0;
  std::vector<std::string> kernels;                        // what ncu profiled, as it names them
  std::vector<std::pair<std::string, std::string>> units;  // metric -> ncu's unit
  bool ok() const { return status == "ok"; }
};

// One run of one cell: everything the record and the commit need, except the run number,
// the comparison and the code identity, which are fixed when it is committed.
struct Run {
  std::string id;  // a random 128-bit measurement id: a journaled run is committed once
  plan::Cell cell;
  std::string command;             // after substitution
  std::string source = "command";  // "command", "record-file" or "metric-option"
  std::string started, finished;   // UTC ISO-8601
  Outcome outcome = Outcome::invalid;
  std::string reason;  // empty for a pass
  util::HeapOptional<Invocation> setup;
  std::vector<Invocation> invocations;
  std::map<std::string, std::vector<double>> samples;  // per metric; missing metrics absent
  // Per metric with `warmup:`: the first samples of each invocation, dropped from `samples`
  // (and so from every analysis); the gates still see them.
  util::HeapOptional<std::map<std::string, std::vector<double>>> warmup;
  util::HeapOptional<std::vector<Profile>> profiles;  // the ncu invocations, when the plan has ncu: metrics
  std::vector<gates::GateResult> gates;
  util::HeapOptional<Schedule> schedule;
  util::HeapOptional<Placement> placement;
  // The throttle reasons the watcher saw while a GPU was busy, over every invocation
  // (merge_throttle's order); empty when none was throttled or nothing was watched.
  util::HeapOptional<std::vector<std::string>> throttled;
  // Seconds the run's commands took: its invocations and ncu profiles (command_seconds), what the
  // run cost the machine; not the setup, which the runs of one `run` share.
  double command_s = 0;
};

// The sum of the invocations' and ncu profiles' wall times (Run::command_s).
double command_seconds(const Run& run);

// The union of the invocations' throttle reasons (Run::throttled).
std::vector<std::string> throttled(const std::vector<Invocation>& invocations);

// The fingerprint's GPU clocks from what the run's invocations watched (Gpu::clocks_from): per
// GPU (matched by UUID), the median over the invocations of the busy samples' median clocks when
// any were busy ("busy"), else of all their samples' medians ("idle"); a GPU nobody watched
// keeps the probe's clocks ("probe").
void apply_watched_clocks(Environment& env, const std::vector<Invocation>& invocations);

// The result of the plan's setup command, run once per step/run invocation.
struct SetupResult {
  Invocation invocation;
  bool ok = false;
  std::string reason;  // why it failed
};

// Runs `plan.setup` (throws Interrupted on SIGINT/SIGTERM). `what` names it in the reason
// ("build exited with status 2"); default: "setup", or for a plan without revisions, whose
// `build` runs as (the start of) its setup, "build" ("build or setup" when it has both).
SetupResult run_setup(const plan::Plan& plan, Executor& executor, std::string_view what = {});

// Called before each invocation: (repeat index from 0, repeats).
using ProgressFn = std::function<void(int, int)>;

// Runs the cell's command `plan.repeats` times, reads the metrics, evaluates the gates.
// A failing setup makes the run invalid without running the command. Throws Interrupted
// when SIGINT/SIGTERM arrives (nothing is measured completely then), and Error(usage) naming
// the plan's `warmup:` when an invocation gives no more samples of a metric than it drops.
// `profile`: run the `ncu:` metrics' profiled invocation (a later round of a batch skips it:
// plan::ncu_every_run).
Run run_cell(const plan::Plan& plan, const plan::Cell& cell, Executor& executor, const SetupResult* setup,
             const ProgressFn& progress = {}, bool profile = true);

// A run from values measured elsewhere: `output` (a file's text, read like stdout, one
// invocation: `warmup:` applies, as in run_cell) and/or explicit samples per metric (which take
// precedence, recorded as given). Missing metrics make it invalid.
Run run_from_values(const plan::Plan& plan, const plan::Cell& cell, const std::optional<std::string>& output,
                    const std::map<std::string, std::vector<double>>& values, std::string source);

// A fresh random measurement id (32 hex digits).
std::string new_measurement_id();

// "2026-11-30T12:34:56Z" for now.
std::string utc_now();

}  // namespace abtrack::runner
