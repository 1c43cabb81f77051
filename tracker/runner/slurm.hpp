#pragma once
// The Slurm executor: pending cells go out as one job array; each task runs its cell's
// command (repeats, env, timeout) on a node and writes its own result file into the
// submission's folder on the shared filesystem. The submitting side polls squeue, turns each
// result into a Run with the same code as local runs (metrics, gates), and commits it.
// Nothing here needs slurmdbd/sacct; nothing here touches git (docs/SCALING.md).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "runner/run.hpp"

namespace abtrack::runner::slurm {

// One cell of a submission.
struct Task {
  int index = 0;   // the array index
  std::string id;  // the measurement id its run is committed under (exactly once)
  std::vector<std::pair<std::string, std::string>> cell;  // axis -> value, plan order
  std::string command;                                    // after substitution
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;
  double timeout_s = 600;
  int repeats = 1;
};

// A job array and its folder: manifest.json (what the tasks run), job.sh, job_id, one
// result-<index>.json per finished task, committed-<index> markers, done when all are in.
struct Submission {
  std::filesystem::path dir;
  std::string experiment;
  std::string job_id;
  std::string created;                      // UTC ISO-8601
  std::map<std::string, std::string> meta;  // what the submitter keeps for later (code identity)
  std::vector<Task> tasks;
};

// Where submissions live: the plan's slurm.dir, or <state_dir>/slurm.
std::filesystem::path base_dir(const plan::Plan& plan, const std::filesystem::path& state_dir);

// Writes a new submission folder under `base` and submits it with `sbatch --parsable
// --array=0-N[%P]`; every task runs `abtrack_exe __task DIR INDEX`. Throws Error(environment)
// with sbatch's message when it is missing or refuses (the folder is removed then).
Submission submit(const plan::Plan& plan, const std::vector<plan::Cell>& cells, const std::filesystem::path& base,
                  const std::filesystem::path& abtrack_exe, const std::map<std::string, std::string>& meta);

// The submissions of `experiment` under `base` that are not completely committed, oldest first.
std::vector<Submission> outstanding(const std::filesystem::path& base, const std::string& experiment);

// What squeue knows of a job's tasks: array index -> state ("PENDING", "RUNNING", "COMPLETED",
// "CANCELLED", "TIMEOUT", "FAILED", ...). Empty when squeue no longer knows the job.
// Throws Error(environment) when squeue cannot run.
std::map<int, std::string> task_states(const std::string& job_id);

// True for states a task does not leave.
bool terminal(const std::string& state);

// The run of task `t` when it has finished: from its result file (metrics and gates read with
// run_cell, exactly as for a local run), or an invalid run when Slurm ended it without one
// (cancelled, failed, timed out, node failure). nullopt while it is pending or running.
// `environment_json` receives the result's environment blob, if it has one.
std::optional<Run> finished_run(const plan::Plan& plan, const Submission& s, const Task& t,
                                const std::map<int, std::string>& states, std::string* environment_json = nullptr);

// Committed markers: a task's run is in the history; done: every task's is.
bool is_committed(const Submission& s, int index);
void mark_committed(const Submission& s, int index);
void mark_done(const Submission& s);

// scancel of the whole array, after leaving the marker cancel_requested() reads. Throws
// Error(environment) when scancel cannot run.
void cancel(const Submission& s);
// True once cancel() was called for the submission: finished_run then reads a result only after
// Slurm has settled its task.
bool cancel_requested(const Submission& s);

// The node side: runs task `index` of the submission in `dir` and writes result-<index>.json
// atomically (also when SIGTERM from scancel or the time limit stops it). `environment_json`
// is stored as is. Returns 0; throws Error (Exit::environment) when the manifest cannot be read
// or has no such task.
int run_task(const std::filesystem::path& dir, int index, const std::string& environment_json);

}  // namespace abtrack::runner::slurm
