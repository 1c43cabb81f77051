#include "experiment/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiment/commit_run.hpp"
#include "record/compare.hpp"
#include "runner/environment.hpp"
#include "runner/slurm.hpp"
#include "util/lock.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"

namespace abtrack::experiment {
namespace fs = std::filesystem;

util::ProcessSpec CommandExecutor::with_gpu(const util::ProcessSpec& spec) const {
  util::ProcessSpec s = spec;
  if (!m_gpu.empty()) s.env.emplace_back("CUDA_VISIBLE_DEVICES", m_gpu);
  if (m_echo) s.echo = m_echo;
  return s;
}

util::ProcessResult CommandExecutor::execute(const util::ProcessSpec& spec) {
  if (m_gpu.empty() && !m_echo) return m_local.execute(spec);
  return m_local.execute(with_gpu(spec));
}

util::ProcessResult CommandExecutor::execute_watched(const util::ProcessSpec& spec,
                                                     util::HeapOptional<runner::Watch>& watch) {
  if (m_gpu.empty() && !m_echo) return m_local.execute_watched(spec, watch);
  return m_local.execute_watched(with_gpu(spec), watch);
}

std::optional<Error> EarlyStop::add(const record::Record& rec) {
  if (m_done) return std::nullopt;
  const auto status = [](const record::Record& r) -> std::optional<int> {
    if (r.data.invocations.empty()) return std::nullopt;
    return r.data.invocations.back().exit_code;
  };
  if (rec.data.outcome != runner::Outcome::invalid ||
      (!m_first.empty() && rec.data.reason != m_first.front().data.reason && status(rec) != status(m_first.front()))) {
    m_done = true;  // the run started otherwise: it goes on
    return std::nullopt;
  }
  m_first.push_back(rec);
  const auto code = status(m_first.front());
  const bool cannot_run =
      code && (*code == 126 || *code == 127) &&
      std::all_of(m_first.begin(), m_first.end(), [&](const record::Record& r) { return status(r) == code; });
  const bool same_reason = std::all_of(m_first.begin(), m_first.end(), [&](const record::Record& r) {
    return r.data.reason == m_first.front().data.reason;
  });
  if (!(cannot_run && m_first.size() >= 2) && !(same_reason && m_first.size() >= 3)) {
    if (!cannot_run && !same_reason) m_done = true;
    return std::nullopt;
  }
  m_done = true;
  std::string fix =
      cannot_run
          ? "is the program built, and its path right? (commands run from the repository root, or from workdir:; "
            "with revisions: in the revision's work tree)"
          : "fix the command (or the setup)";
  return Error(
      Exit::run_failed,
      fmt::format("stopped after the first {} runs, all invalid alike: {}", m_first.size(), m_first.back().data.reason),
      fix +
          "; then `abtrack run` runs the cells whose latest run is invalid again; "
          "--keep-going runs every cell however the first ones end");
}

record::Record compared_with_head(const Context& ctx, record::Record draft) {
  auto records = head_records(ctx);
  draft.run = records.empty() ? 1 : records.back().run + 1;  // as a commit would number it, for the pools
  records.push_back(draft);
  draft.comparison.reset();
  if (auto c = record::compare_run(ctx.plan, records)) draft.comparison = std::move(*c);
  draft.run = 0;
  return draft;
}

std::string dry_result_line(const plan::Plan& plan, const record::Record& rec) {
  std::string line = result_line(plan, rec);
  // A draft (run 0) reads "measured x=1: ..." (result_line).
  for (const std::string& prefix : {fmt::format("run {} ", rec.run), std::string("measured ")})
    if (line.starts_with(prefix)) return "dry run " + line.substr(prefix.size());
  return line;
}

std::string interrupted_cell_state(const Context& ctx, const plan::Cell& cell) {
  std::size_t n = 0;
  try {
    auto records =
        ctx.repo.with_head([&](const gitstore::TreeView& t) { return load_records(ctx, t, record::Part::header); });
    for (const auto& c : record::cells_with_runs(ctx.plan, records))
      if (c.cell == cell) n = c.runs.size();
  } catch (const Error&) {
    return ctx.plan.label(cell) + " keeps the runs it had";
  }
  if (n == 0) return ctx.plan.label(cell) + " is still pending";
  return fmt::format("{} keeps its {} earlier run{}", ctx.plan.label(cell), n, n == 1 ? "" : "s");
}

std::vector<plan::Cell> cells_to_run(const Context& ctx, bool invalid, bool failed, std::size_t* failed_left) {
  auto records =
      ctx.repo.with_head([&](const gitstore::TreeView& t) { return load_records(ctx, t, record::Part::header); });
  std::vector<plan::Cell> out;
  for (const auto& c : record::cells_with_runs(ctx.plan, records)) {
    const auto latest = c.runs.empty() ? std::nullopt : std::optional(c.latest()->data.outcome);
    if (!latest || (invalid && *latest == runner::Outcome::invalid) || (failed && *latest == runner::Outcome::fail))
      out.push_back(c.cell);
    else if (failed_left && *latest == runner::Outcome::fail) ++*failed_left;
  }
  return out;
}

std::string measured_elsewhere(const Context& ctx) {
  std::set<std::string> there;
  const auto here = runner::gpu_kinds(runner::environment().gpus);
  if (here.empty()) return {};  // no GPU here: nothing to measure them on
  bool elsewhere = false;
  const auto records = head_records(ctx);
  for (const auto& c : record::cells_with_runs(ctx.plan, records)) {
    if (!c.latest()) continue;
    const auto kinds = record::gpu_kinds(*c.latest());
    there.insert(kinds.begin(), kinds.end());
    elsewhere = elsewhere || !runner::has_kinds(here, kinds);
  }
  if (!elsewhere) return {};
  return fmt::format(
      "the cells' latest runs are on {}; this machine has {}: `abtrack run --all` measures every cell "
      "here, in pools of their own",
      runner::describe_kinds(there), runner::describe_kinds(here));
}

std::string new_batch_id() {
  return fmt::format("{:016x}", (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
}

namespace {

// Where a cell runs: in its revision's tree, rooted there, after its build (a failed build makes
// the run invalid), measuring the revision's code; or in the work tree.
struct Site {
  const Revision* rev = nullptr;
  plan::Plan plan;
  const runner::SetupResult* before = nullptr;  // the build's failure, else the setup's result
};

Site site_of(const Context& ctx, const RunOptions& opts, const plan::Cell& cell,
             const std::optional<runner::SetupResult>& setup) {
  Site s;
  s.before = setup ? &*setup : nullptr;
  if (!opts.revisions) {
    s.plan = ctx.plan;
    return s;
  }
  s.rev = revision_of(ctx.plan, *opts.revisions, cell);  // throws for a cell of no revision
  s.plan = plan_for(ctx.plan, *s.rev);
  if (s.rev->failed_build) s.before = &*s.rev->failed_build;
  return s;
}

// The code a cell measures, taken (on the calling thread: libgit2) when it starts: its
// revision's, or the work tree's (none for a dry run: it makes no snapshot).
record::Code code_at_start(const Context& ctx, Progress& progress, const RunOptions& opts, const Site& site,
                           std::optional<bool> dirty) {
  if (site.rev) return site.rev->code;
  if (opts.dry_run) return {};
  return code_identity(ctx, progress, dirty);
}

// Which cells of a batch of rounds have had their `ncu:` metrics profiled (RunOptions::profiled):
// a later round's run is not profiled again, since its counters would only repeat the first's at
// the cost of one more invocation each.
class Profiled {
 public:
  explicit Profiled(const RunOptions& opts) : m_cells(opts.profiled ? *opts.profiled : m_own) {}
  Profiled(const Profiled&) = delete;
  Profiled& operator=(const Profiled&) = delete;
  // Whether the run of `cell` at `sched` profiles.
  bool wanted(const plan::Plan& plan, const plan::Cell& cell, const runner::Schedule& sched) const {
    return sched.rounds <= 1 || plan::ncu_every_run(plan) || !m_cells.contains(plan.label(cell));
  }
  // Notes a run that was profiled (it has profiles: its timed invocations counted).
  void note(const plan::Plan& plan, const runner::Run& run) {
    if (!run.profiles.or_empty().empty()) m_cells.insert(plan.label(run.cell));
  }

 private:
  std::set<std::string> m_own;
  std::set<std::string>& m_cells;
};

// "round 2/6 rev=mine x=1" for a cell of several rounds, else its label.
std::string progress_label(const plan::Plan& plan, const plan::Cell& cell, const runner::Schedule& sched) {
  return sched.rounds > 1 ? fmt::format("round {}/{} {}", sched.round, sched.rounds, plan.label(cell))
                          : plan.label(cell);
}

std::unique_ptr<runner::Executor> make_executor(const RunOptions& opts, const std::string& gpu, util::OutputFn echo) {
  if (opts.executors) return opts.executors(gpu, std::move(echo));
  return std::make_unique<CommandExecutor>(gpu, std::move(echo));
}

std::optional<runner::SetupResult> run_plan_setup(const Context& ctx, Progress& progress, const RunOptions& opts,
                                                  const std::string& echo_prefix) {
  if (util::trim(ctx.plan.setup).empty()) return std::nullopt;
  auto executor = make_executor(opts, "", progress.command_output(echo_prefix));
  progress.info("setup: " + ctx.plan.setup);
  auto setup = runner::run_setup(ctx.plan, *executor);
  if (!setup.ok) progress.warn(setup.reason + "; every run of this invocation is recorded as invalid");
  return setup;
}

// Progress::cells_started, and cells_done when the scope ends, also by an exception.
class CellsShown {
 public:
  CellsShown(Progress& progress, std::size_t total) : m_progress(progress) { m_progress.cells_started(total); }
  ~CellsShown() { m_progress.cells_done(); }
  CellsShown(const CellsShown&) = delete;
  CellsShown& operator=(const CellsShown&) = delete;

 private:
  Progress& m_progress;
};

// Tells `progress` the result of run `rec` and keeps it: the worst exit code, opts.records.
void report(const Context& ctx, Progress& progress, const RunOptions& opts, const record::Record& rec,
            int& worst_exit) {
  const std::string line = opts.dry_run ? dry_result_line(ctx.plan, rec) : result_line(ctx.plan, rec);
  if (opts.results_as_info) progress.info(line);
  else progress.result(line, rec);
  if (rec.data.outcome != runner::Outcome::pass) worst_exit = static_cast<int>(Exit::run_failed);
  if (opts.records) opts.records->push_back(rec);
}

}  // namespace

void run_serial(Context& ctx, Progress& progress, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                bool dirty, const RunOptions& opts, int& worst_exit) {
  auto executor = make_executor(opts, "", progress.command_output(""));
  const auto setup = opts.setup_done ? std::nullopt : run_plan_setup(ctx, progress, opts, "");
  CellsShown shown(progress, cells.size());
  EarlyStop early;
  Profiled profiled(opts);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& [cell, sched] = cells[i];
    const Site site = site_of(ctx, opts, cell, setup);
    const record::Code code = code_at_start(
        ctx, progress, opts, site, i == 0 && !setup && !opts.setup_done ? std::optional<bool>(dirty) : std::nullopt);
    progress.cell_started(i, progress_label(ctx.plan, cell, sched));
    auto invocation = [&](int r, int n) { progress.invocation_started(r, n); };
    runner::Run run;
    try {
      run = runner::run_cell(site.plan, cell, *executor, site.before, invocation,
                             profiled.wanted(site.plan, cell, sched));
      profiled.note(site.plan, run);
      util::trace("command ran");
      if (sched.rounds > 1) run.schedule = sched;
    } catch (const Interrupted& e) {
      throw Error(Exit::interrupted,
                  fmt::format("{} while running {}; nothing was recorded for it: {}", e.diagnostics().front().message,
                              ctx.plan.label(cell), interrupted_cell_state(ctx, cell)));
    }
    progress.cell_measured();
    auto draft = draft_record(ctx, progress, run, code, site.rev);
    auto rec = opts.dry_run   ? compared_with_head(ctx, std::move(draft))
               : !opts.commit ? draft
                              : journal_and_commit(ctx, progress, draft);
    report(ctx, progress, opts, rec, worst_exit);
    if (opts.early_stop)
      if (auto stop = early.add(rec); stop && i + 1 < cells.size()) throw *stop;
  }
}

namespace {

// What a measuring thread hands back.
struct Finished {
  std::size_t index = 0;
  std::string gpu;
  std::optional<runner::Run> run;  // unset: interrupted or failed
  std::exception_ptr error;
};

// A cell of run_parallel from its start until its run is committed.
struct Slot {
  std::optional<Site> site;
  record::Code code;
  std::optional<record::Record> draft;
  std::shared_ptr<void> journal;
  bool done = false;
};

// Measures cell `index` of `cells` at `site` on a measuring thread, `gpu` its GPU ("" for none).
Finished measure_cell(const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells, std::size_t index,
                      const std::string& gpu, const Site& site, runner::Executor& executor, bool profile) {
  Finished f;
  f.index = index;
  f.gpu = gpu;
  try {
    auto run = runner::run_cell(site.plan, cells[index].first, executor, site.before, {}, profile);
    if (cells[index].second.rounds > 1) run.schedule = cells[index].second;
    if (!gpu.empty()) run.placement = runner::Placement{"local", gpu, "", std::nullopt, ""};
    f.run = std::move(run);
  } catch (...) {
    f.error = std::current_exception();
  }
  return f;
}

// The interruption of run_parallel: `message`, and the state of each cell it stopped.
Error interrupted_error(const Context& ctx, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                        const std::string& message, std::vector<std::size_t> stopped) {
  std::sort(stopped.begin(), stopped.end());
  std::vector<std::string> states;
  for (std::size_t i : stopped) states.push_back(interrupted_cell_state(ctx, cells[i].first));
  return Error(Exit::interrupted,
               fmt::format("{}; the running cells were stopped and nothing was recorded for them{}{}", message,
                           states.empty() ? "" : ": ", fmt::join(states, ", ")));
}

}  // namespace

void run_parallel(Context& ctx, Progress& progress, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                  int jobs, bool dirty, const RunOptions& opts, int& worst_exit) {
  const auto setup = opts.setup_done ? std::nullopt : run_plan_setup(ctx, progress, opts, "[setup] ");
  std::deque<std::string> free_gpus(ctx.plan.gpus.begin(), ctx.plan.gpus.end());
  if (!free_gpus.empty()) jobs = std::min<int>(jobs, static_cast<int>(free_gpus.size()));
  jobs = std::max(1, jobs);

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Finished> inbox;
  std::vector<std::thread> threads;
  std::vector<Slot> slots(cells.size());
  std::size_t next_dispatch = 0, next_commit = 0;
  int running = 0;
  bool stop = false;
  std::exception_ptr failure;
  std::optional<std::string> interrupted;
  std::vector<std::size_t> stopped;  // cells an interrupt stopped
  EarlyStop early;
  Profiled profiled(opts);
  std::optional<Error> stopped_early;

  auto commit_ready = [&](bool skip_gaps) {
    while (next_commit < cells.size()) {
      auto& slot = slots[next_commit];
      if (!slot.done) {
        if (!skip_gaps) return;
        ++next_commit;
        continue;
      }
      if (slot.draft) {
        auto rec = opts.dry_run   ? compared_with_head(ctx, *slot.draft)
                   : !opts.commit ? *slot.draft
                                  : commit_run(ctx, progress, *slot.draft);
        slot.journal.reset();  // committed: the entry goes
        report(ctx, progress, opts, rec, worst_exit);
        if (opts.early_stop && !stopped_early)
          if (auto e = early.add(rec); e && next_dispatch < cells.size()) {
            stopped_early = std::move(e);
            stop = true;  // no further cell starts; the running ones end and are committed
          }
      }
      slot.draft.reset();
      ++next_commit;
    }
  };

  while (true) {
    while (!stop && running < jobs && next_dispatch < cells.size()) {
      std::size_t i = next_dispatch++;
      const auto& [cell, sched] = cells[i];
      // The code identity is taken on this thread (libgit2), when the cell starts.
      slots[i].site = site_of(ctx, opts, cell, setup);
      slots[i].code = code_at_start(ctx, progress, opts, *slots[i].site,
                                    i == 0 && !setup && !opts.setup_done ? std::optional<bool>(dirty) : std::nullopt);
      std::string gpu;
      if (!free_gpus.empty()) {
        gpu = free_gpus.front();
        free_gpus.pop_front();
      }
      progress.info(fmt::format("[{}/{}] {}{}", i + 1, cells.size(), progress_label(ctx.plan, cell, sched),
                                gpu.empty() ? "" : " (gpu " + gpu + ")"));
      ++running;
      // Made on this thread, as the Progress and the factory expect; used on the cell's own.
      auto executor = make_executor(opts, gpu, progress.command_output(fmt::format("[{}] ", ctx.plan.label(cell))));
      const bool profile = profiled.wanted(slots[i].site->plan, cell, sched);
      threads.emplace_back([&, i, gpu, profile, executor = std::move(executor)] {
        Finished f = measure_cell(cells, i, gpu, *slots[i].site, *executor, profile);
        std::lock_guard lock(mutex);
        inbox.push_back(std::move(f));
        cv.notify_one();
      });
    }
    if (running == 0) break;
    Finished f;
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return !inbox.empty(); });
      f = std::move(inbox.front());
      inbox.pop_front();
    }
    --running;
    if (!f.gpu.empty()) free_gpus.push_back(f.gpu);
    auto& slot = slots[f.index];
    slot.done = true;
    if (f.run) {
      profiled.note(slot.site->plan, *f.run);
      slot.draft = draft_record(ctx, progress, *f.run, slot.code, slot.site->rev);
      if (!opts.dry_run && opts.commit) slot.journal = journal_run(ctx, progress, *slot.draft);
    } else {
      stop = true;
      try {
        std::rethrow_exception(f.error);
      } catch (const Interrupted& e) {
        if (!interrupted) interrupted = e.diagnostics().front().message;
        stopped.push_back(f.index);
      } catch (...) {
        if (!failure) failure = f.error;
      }
    }
    try {
      commit_ready(false);
    } catch (...) {
      stop = true;
      if (!failure) failure = std::current_exception();
    }
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  commit_ready(true);  // after an interrupt: what finished is committed, the rest stays as it was
  if (interrupted) throw interrupted_error(ctx, cells, *interrupted, stopped);
  if (stopped_early) throw *stopped_early;
}

namespace {

fs::path slurm_base(const Context& ctx) { return runner::slurm::base_dir(ctx.plan, ctx.repo.state_dir()); }

record::Code code_of(const runner::slurm::Submission& s) {
  record::Code c;
  auto get = [&](const char* k) {
    auto it = s.meta.find(k);
    return it == s.meta.end() ? std::string() : it->second;
  };
  c.commit = get("code_commit");
  c.dirty = get("code_dirty") == "true";
  c.snapshot = get("code_snapshot");
  return c;
}

// One pass over one submission (under its lock). Returns how many tasks still wait. Tasks are
// committed in plan order (their array order), as a local run commits: a finished task waits
// for the ones before it, so run numbers and baseline comparisons are those of a serial run.
int collect_one(Context& ctx, Progress& progress, runner::slurm::Submission& s, CollectResult& out) {
  util::FileLock lock(s.dir / "collect.lock");  // one collector at a time per submission
  if (std::filesystem::exists(s.dir / "done")) return 0;
  auto states = runner::slurm::task_states(s.job_id);
  int waiting = 0;
  for (const auto& t : s.tasks) {
    if (runner::slurm::is_committed(s, t.index)) continue;
    if (waiting > 0) {  // an earlier task is not committed yet
      ++waiting;
      continue;
    }
    std::string env_json;
    std::optional<runner::Run> run;
    try {
      run = runner::slurm::finished_run(ctx.plan, s, t, states, &env_json);
    } catch (const Error& e) {
      progress.warn(fmt::format("slurm job {}: {}; left uncommitted", s.job_id, e.diagnostics().front().message));
      ++waiting;
      continue;
    }
    if (!run) {
      ++waiting;
      continue;
    }
    auto draft = draft_record(ctx, progress, *run, code_of(s));
    if (!env_json.empty()) {
      try {
        draft.env = record::parse_record(env_json, "task environment").env;
      } catch (const Error&) {
        // The node's fingerprint is unreadable: the record keeps the submitting host's.
      }
    }
    auto before = ctx.repo.head();
    auto rec = commit_run(ctx, progress, draft);  // skips a measurement id already in the history
    runner::slurm::mark_committed(s, t.index);
    if (ctx.repo.head() != before) {
      progress.result(result_line(ctx.plan, rec), rec);
      ++out.committed;
      out.any_bad |= rec.data.outcome != runner::Outcome::pass;
    }
  }
  if (waiting == 0) runner::slurm::mark_done(s);
  return waiting;
}

CollectResult collect_loop(Context& ctx, Progress& progress, double wait_s, bool stop_on_interrupt) {
  CollectResult out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, wait_s));
  for (;;) {
    out.waiting = 0;
    for (auto& s : runner::slurm::outstanding(slurm_base(ctx), ctx.plan.experiment))
      out.waiting += collect_one(ctx, progress, s, out);
    if (out.waiting == 0 || std::chrono::steady_clock::now() >= deadline ||
        (stop_on_interrupt && util::interrupt_signal()))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return out;
}
}  // namespace

CollectResult collect_submissions(Context& ctx, Progress& progress, double wait_s) {
  return collect_loop(ctx, progress, wait_s, true);
}

int cancel_submissions(Context& ctx, Progress& progress) {
  int n = 0;
  for (const auto& s : runner::slurm::outstanding(slurm_base(ctx), ctx.plan.experiment)) {
    runner::slurm::cancel(s);
    progress.info(fmt::format("cancelled slurm job {} ({} tasks)", s.job_id, s.tasks.size()));
    ++n;
  }
  return n;
}

int run_slurm(Context& ctx, Progress& progress, const std::vector<plan::Cell>& cells, bool dirty, bool detach) {
  // Cells already out in an earlier submission are not sent twice.
  std::vector<plan::Cell> todo;
  auto subs = runner::slurm::outstanding(slurm_base(ctx), ctx.plan.experiment);
  for (const auto& c : cells) {
    bool out = false;
    for (const auto& s : subs)
      for (const auto& t : s.tasks) {
        if (runner::slurm::is_committed(s, t.index) || t.cell.size() != c.values.size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < c.values.size(); ++i) same &= t.cell[i].second == c.values[i];
        if (same) out = true;
      }
    if (!out) todo.push_back(c);
  }
  if (todo.empty()) {
    progress.info(
        fmt::format("every pending cell is already submitted (slurm job {}); `abtrack collect` commits the results",
                    subs.empty() ? std::string("?") : subs.back().job_id));
    return 0;
  }
  runner::LocalExecutor executor;
  if (!util::trim(ctx.plan.setup).empty()) {
    // The setup (a build) runs here, once, on the shared filesystem; a failure makes every run
    // invalid without submitting anything.
    progress.info("setup: " + ctx.plan.setup);
    auto setup = runner::run_setup(ctx.plan, executor);
    if (!setup.ok) {
      progress.warn(setup.reason + "; every run of this invocation is recorded as invalid");
      int worst = 0;
      for (const auto& c : todo) {
        auto run = runner::run_cell(ctx.plan, c, executor, &setup);
        auto rec = journal_and_commit(ctx, progress, draft_record(ctx, progress, run, code_identity(ctx, progress)));
        progress.result(result_line(ctx.plan, rec), rec);
        worst = static_cast<int>(Exit::run_failed);
      }
      return worst;
    }
  }
  auto code = code_identity(ctx, progress, dirty);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(Exit::environment, "cannot find the abtrack binary (/proc/self/exe) for the Slurm tasks");
  auto s = runner::slurm::submit(
      ctx.plan, todo, slurm_base(ctx), exe,
      {{"code_commit", code.commit}, {"code_dirty", code.dirty ? "true" : "false"}, {"code_snapshot", code.snapshot}});
  progress.print(fmt::format("submitted slurm job {} ({} cells)\n", s.job_id, todo.size()));
  if (detach) {
    progress.info(fmt::format("results go to {}; `abtrack collect` commits them", s.dir.string()));
    return 0;
  }
  CollectResult total;
  for (;;) {
    auto r = collect_submissions(ctx, progress, 0);
    total.committed += r.committed;
    total.any_bad |= r.any_bad;
    if (r.waiting == 0) break;
    if (int sig = util::interrupt_signal()) {
      progress.warn(fmt::format("interrupted by {}: cancelling slurm job {}", util::signal_name(sig), s.job_id));
      runner::slurm::cancel(s);
      auto rest = collect_loop(ctx, progress, 15, false);
      total.any_bad |= rest.any_bad;
      throw Error(Exit::interrupted,
                  fmt::format("interrupted by {}; slurm job {} was cancelled{}", util::signal_name(sig), s.job_id,
                              rest.waiting ? "; `abtrack collect` commits what is still ending" : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return total.any_bad ? static_cast<int>(Exit::run_failed) : 0;
}

}  // namespace abtrack::experiment
