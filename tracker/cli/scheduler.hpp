#pragma once
// Scale-out for `run`: cells in parallel on this machine's GPUs, or as a Slurm job array.
// Either way one committer, the calling thread, makes every commit: measuring threads and
// Slurm tasks never touch libgit2, and history stays linear (docs/SCALING.md).
#include <utility>
#include <vector>

#include "cli/context.hpp"
#include "runner/run.hpp"

namespace abtrack::cli {

// Runs the cells with up to `jobs` at once, each running cell on its own GPU from plan.gpus
// (CUDA_VISIBLE_DEVICES, recorded in the run's placement) when the plan lists GPUs. Runs the
// setup first. Commits on this thread in schedule order, each run journaled as soon as it is
// measured, so the records equal a serial run's apart from timings. SIGINT stops every running
// process group; finished runs are committed, then Error(interrupted) is thrown.
void run_parallel(Context& ctx, const GlobalOptions& g, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                  int jobs, bool dirty, int& worst_exit);

// Submits the cells (those not already in an outstanding submission) as one job array.
// Detached: prints the job id and returns 0. Attached: polls and commits each run as its
// task finishes; Ctrl-C cancels the array (scancel), commits what ended, exits 130.
int run_slurm(Context& ctx, const GlobalOptions& g, const std::vector<plan::Cell>& cells, bool dirty, bool detach);

struct CollectResult {
  int committed = 0;     // runs committed by this call
  int waiting = 0;       // tasks still pending or running
  bool any_bad = false;  // a committed run failed or was invalid
};

// Commits the finished tasks of every outstanding submission of the experiment, each once
// (a per-submission lock, committed markers, and the measurement id in the history), and
// prints their result lines. With `wait_s` > 0 it polls until nothing waits or the time is up.
CollectResult collect_submissions(Context& ctx, const GlobalOptions& g, double wait_s);

// scancel of every outstanding submission of the experiment; returns how many.
int cancel_submissions(Context& ctx, const GlobalOptions& g);

}  // namespace abtrack::cli
