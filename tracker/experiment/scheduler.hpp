#pragma once
// Scale-out for `run`: cells in parallel on this machine's GPUs, or as a Slurm job array.
// Either way one committer, the calling thread, makes every commit: measuring threads and
// Slurm tasks never touch libgit2, and history stays linear (docs/SCALING.md).
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "experiment/context.hpp"
#include "experiment/revisions.hpp"
#include "runner/run.hpp"
#include "util/error.hpp"
#include "util/process.hpp"

namespace abtrack::experiment {

// Makes an executor for the plan's setup or a cell's command: `gpu` the CUDA_VISIBLE_DEVICES it
// gets ("": none), `echo` where its output also goes as it arrives (empty: nowhere). Called on
// the thread that runs run_serial or run_parallel.
using ExecutorFactory = std::function<std::unique_ptr<runner::Executor>(const std::string& gpu, util::OutputFn echo)>;

// How `step`, `run` and `bisect` treat what they measure.
struct RunOptions {
  bool dry_run = false;     // give the result lines (compared with HEAD's records); commit and journal nothing
  bool early_stop = false;  // stop when the first runs all fail the same way (EarlyStop); `run` without --keep-going
  // A plan with revisions: each cell runs in its revision's tree and measures its code
  // (revisions.hpp), after that revision's build. Null: every cell runs in the work tree.
  const std::vector<Revision>* revisions = nullptr;
  // false (`bisect`): measure only; each run's draft (draft_record, run 0) goes to `records`,
  // with no journal, no comparison and no commit.
  bool commit = true;
  bool results_as_info = false;  // each result line as Progress::info (which -q hides), not Progress::result
  // When set, receives each run's record: as committed, or as measured (dry_run, !commit).
  std::vector<record::Record>* records = nullptr;
  // A later round of `rounds: auto`: the plan's setup already ran for this invocation.
  bool setup_done = false;
  // In a batch of rounds, the cells (by label) whose `ncu:` metrics this invocation profiled: a
  // cell is profiled in its first run whose timed invocations counted, not again, unless every
  // run needs them (plan::ncu_every_run). Null: each run_serial/run_parallel call keeps its own.
  std::set<std::string>* profiled = nullptr;
  // Where the setup and the cells' commands run. Empty: CommandExecutor (local processes).
  ExecutorFactory executors;
};

// The cells to measure next, in plan order: those without a run in HEAD; with `invalid` also
// those whose latest run is invalid (a fixed command or plan measures them), with `failed` those
// whose latest run failed a gate. `failed_left`: counts the cells with a failed latest run that
// were left out.
std::vector<plan::Cell> cells_to_run(const Context& ctx, bool invalid, bool failed, std::size_t* failed_left = nullptr);

// For a `run` that finds nothing to do: when cells' latest runs were measured on kinds of GPU this
// machine lacks, says so ("their latest runs are on NVIDIA H100 80GB HBM3; this machine has
// NVIDIA H200: ..."), since a new card gets no run without --all; "" otherwise, and on a machine
// without a GPU.
std::string measured_elsewhere(const Context& ctx);

// A batch id for the rounds of one invocation: random, whatever the seed, so that the rounds of
// two invocations never merge.
std::string new_batch_id();

// The local executor, with a GPU (CUDA_VISIBLE_DEVICES on top of the plan's env) when `gpu` is
// not empty, and the commands' output also given to `echo` (-v) when set.
class CommandExecutor final : public runner::Executor {
 public:
  CommandExecutor(std::string gpu, util::OutputFn echo) : m_gpu(std::move(gpu)), m_echo(std::move(echo)) {}
  util::ProcessResult execute(const util::ProcessSpec& spec) override;
  util::ProcessResult execute_watched(const util::ProcessSpec& spec, util::HeapOptional<runner::Watch>& watch) override;

 private:
  util::ProcessSpec with_gpu(const util::ProcessSpec& spec) const;
  runner::LocalExecutor m_local;
  std::string m_gpu;
  util::OutputFn m_echo;
};

// Watches the first runs of a `run`, in schedule order: when the first 2 ended invalid with the
// same exit status 126 or 127 (cannot execute, not found), or the first 3 invalid for one
// identical reason, the rest would fail alike. add() returns that error (exit 1, with a hint
// naming --keep-going) once, then nothing: a run that started otherwise is never stopped.
class EarlyStop {
 public:
  std::optional<Error> add(const record::Record& rec);

 private:
  std::vector<record::Record> m_first;
  bool m_done = false;
};

// For a dry run: `draft` compared with the baseline cell's pool among HEAD's records (as a
// commit would compare it), and its result line ("dry run x=1: pass ...").
record::Record compared_with_head(const Context& ctx, record::Record draft);
std::string dry_result_line(const plan::Plan& plan, const record::Record& rec);

// What became of a cell whose run was interrupted: "x=1 is still pending" or "x=1 keeps its 2
// earlier runs", from HEAD's records.
std::string interrupted_cell_state(const Context& ctx, const plan::Cell& cell);

// Runs the cells one after the other after the plan's setup, one commit per run, telling
// `progress` each cell's start, invocations and result (Progress::cells_started .. cells_done). `dirty`: the
// preflight's finding, good for the first cell (later cells scan again: a setup or the user may change files
// meanwhile). SIGINT: Error(interrupted) naming what became of the cell. With `opts.early_stop`, EarlyStop's error is
// thrown when it fires.
void run_serial(Context& ctx, Progress& progress, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                bool dirty, const RunOptions& opts, int& worst_exit);

// Runs the cells with up to `jobs` at once, each running cell on its own GPU from plan.gpus
// (CUDA_VISIBLE_DEVICES, recorded in the run's placement) when the plan lists GPUs. Runs the
// setup first. Commits on this thread in schedule order, each run journaled as soon as it is
// measured, so the records equal a serial run's apart from timings. Each cell's start is info to
// `progress`, each result a Progress::result. SIGINT stops every running process group;
// finished runs are committed, then Error(interrupted) is thrown. With `opts.early_stop`, once
// EarlyStop fires no further cell starts; the running ones are committed, then its error is
// thrown.
void run_parallel(Context& ctx, Progress& progress, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                  int jobs, bool dirty, const RunOptions& opts, int& worst_exit);

// Submits the cells (those not already in an outstanding submission) as one job array.
// Detached: prints the job id (to `progress`) and returns 0. Attached: polls and commits each
// run as its task finishes; Ctrl-C cancels the array (scancel), commits what ended, exits 130.
int run_slurm(Context& ctx, Progress& progress, const std::vector<plan::Cell>& cells, bool dirty, bool detach);

struct CollectResult {
  int committed = 0;     // runs committed by this call
  int waiting = 0;       // tasks still pending or running
  bool any_bad = false;  // a committed run failed or was invalid
};

// Commits the finished tasks of every outstanding submission of the experiment, each once
// (a per-submission lock, committed markers, and the measurement id in the history), and
// gives their result lines to `progress`. With `wait_s` > 0 it polls until nothing waits or the time is up.
CollectResult collect_submissions(Context& ctx, Progress& progress, double wait_s);

// scancel of every outstanding submission of the experiment, each one info to `progress`;
// returns how many.
int cancel_submissions(Context& ctx, Progress& progress);

}  // namespace abtrack::experiment
