#include "cli/scheduler.hpp"


#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli/commit_run.hpp"
#include "runner/slurm.hpp"
#include "util/lock.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace fs = std::filesystem;

namespace {

// The local executor with the cell's GPU on top of the plan's env.
class GpuExecutor final : public runner::Executor {
 public:
  explicit GpuExecutor(std::string gpu) : m_gpu(std::move(gpu)) {}
  util::ProcessResult execute(const util::ProcessSpec& spec) override {
    if (m_gpu.empty()) return m_local.execute(spec);
    util::ProcessSpec s = spec;
    s.env.emplace_back("CUDA_VISIBLE_DEVICES", m_gpu);
    return m_local.execute(s);
  }

 private:
  runner::LocalExecutor m_local;
  std::string m_gpu;
};

// What a measuring thread hands back.
struct Finished {
  std::size_t index = 0;
  std::string gpu;
  std::optional<runner::Run> run;  // unset: interrupted or failed
  std::exception_ptr error;
};

}  // namespace

void run_parallel(Context& ctx, const GlobalOptions& g, const std::vector<std::pair<plan::Cell, runner::Schedule>>& cells,
                  int jobs, bool dirty, int& worst_exit) {
  runner::LocalExecutor setup_executor;
  std::optional<runner::SetupResult> setup;
  if (!util::trim(ctx.plan.setup).empty()) {
    info(g, "setup: " + ctx.plan.setup);
    setup = runner::run_setup(ctx.plan, setup_executor);
    if (!setup->ok) warn(setup->reason + "; every run of this invocation is recorded as invalid");
  }
  std::deque<std::string> free_gpus(ctx.plan.gpus.begin(), ctx.plan.gpus.end());
  if (!free_gpus.empty()) jobs = std::min<int>(jobs, static_cast<int>(free_gpus.size()));
  jobs = std::max(1, jobs);

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Finished> inbox;
  std::vector<std::thread> threads;
  struct Slot {
    record::Code code;
    std::optional<record::Record> draft;
    std::shared_ptr<void> journal;
    bool done = false;
  };
  std::vector<Slot> slots(cells.size());
  std::size_t next_dispatch = 0, next_commit = 0;
  int running = 0;
  bool stop = false;
  std::exception_ptr failure;
  std::optional<std::string> interrupted;

  auto commit_ready = [&](bool skip_gaps) {
    while (next_commit < cells.size()) {
      auto& slot = slots[next_commit];
      if (!slot.done) {
        if (!skip_gaps) return;
        ++next_commit;
        continue;
      }
      if (slot.draft) {
        auto rec = commit_run(ctx, *slot.draft);
        slot.journal.reset();  // committed: the entry goes
        fmt::print("{}\n", result_line(ctx.plan, rec));
        std::fflush(stdout);
        if (rec.data.outcome != runner::Outcome::pass) worst_exit = static_cast<int>(Exit::run_failed);
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
      slots[i].code = code_identity(ctx, i == 0 && !setup ? std::optional<bool>(dirty) : std::nullopt);
      std::string gpu;
      if (!free_gpus.empty()) {
        gpu = free_gpus.front();
        free_gpus.pop_front();
      }
      info(g, fmt::format("[{}/{}] {}{}", i + 1, cells.size(), ctx.plan.label(cell), gpu.empty() ? "" : " (gpu " + gpu + ")"));
      ++running;
      threads.emplace_back([&, i, gpu] {
        Finished f;
        f.index = i;
        f.gpu = gpu;
        try {
          GpuExecutor executor(gpu);
          auto run = runner::run_cell(ctx.plan, cells[i].first, executor, setup ? &*setup : nullptr);
          if (cells[i].second.rounds > 1) run.schedule = cells[i].second;
          if (!gpu.empty()) run.placement = runner::Placement{"local", gpu, "", std::nullopt, ""};
          f.run = std::move(run);
        } catch (...) {
          f.error = std::current_exception();
        }
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
      slot.draft = draft_record(ctx, *f.run, slot.code);
      slot.journal = journal_run(ctx, *slot.draft);
    } else {
      stop = true;
      try {
        std::rethrow_exception(f.error);
      } catch (const Interrupted& e) {
        if (!interrupted) interrupted = e.diagnostics().front().message;
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
  commit_ready(true);  // after an interrupt: what finished is committed, the rest stays pending
  if (interrupted) {
    throw Error(Exit::interrupted, fmt::format("{}; the running cells were stopped and nothing was recorded for them", *interrupted));
  }
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
int collect_one(Context& ctx, runner::slurm::Submission& s, CollectResult& out) {
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
      warn(fmt::format("slurm job {}: {}; left uncommitted", s.job_id, e.diagnostics().front().message));
      ++waiting;
      continue;
    }
    if (!run) {
      ++waiting;
      continue;
    }
    auto draft = draft_record(ctx, *run, code_of(s));
    if (!env_json.empty()) {
      try {
        draft.env = record::parse_record(env_json, "task environment").env;
      } catch (const Error&) {
        // The node's fingerprint is unreadable: the record keeps the submitting host's.
      }
    }
    auto before = ctx.repo.head();
    auto rec = commit_run(ctx, draft);  // skips a measurement id already in the history
    runner::slurm::mark_committed(s, t.index);
    if (ctx.repo.head() != before) {
      fmt::print("{}\n", result_line(ctx.plan, rec));
      std::fflush(stdout);
      ++out.committed;
      out.any_bad |= rec.data.outcome != runner::Outcome::pass;
    }
  }
  if (waiting == 0) runner::slurm::mark_done(s);
  return waiting;
}

}  // namespace

namespace {
CollectResult collect_loop(Context& ctx, double wait_s, bool stop_on_interrupt) {
  CollectResult out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, wait_s));
  for (;;) {
    out.waiting = 0;
    for (auto& s : runner::slurm::outstanding(slurm_base(ctx), ctx.plan.experiment)) out.waiting += collect_one(ctx, s, out);
    if (out.waiting == 0 || std::chrono::steady_clock::now() >= deadline || (stop_on_interrupt && util::interrupt_signal())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return out;
}
}  // namespace

CollectResult collect_submissions(Context& ctx, const GlobalOptions&, double wait_s) { return collect_loop(ctx, wait_s, true); }

int cancel_submissions(Context& ctx, const GlobalOptions& g) {
  int n = 0;
  for (const auto& s : runner::slurm::outstanding(slurm_base(ctx), ctx.plan.experiment)) {
    runner::slurm::cancel(s);
    info(g, fmt::format("cancelled slurm job {} ({} tasks)", s.job_id, s.tasks.size()));
    ++n;
  }
  return n;
}

int run_slurm(Context& ctx, const GlobalOptions& g, const std::vector<plan::Cell>& cells, bool dirty, bool detach) {
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
    info(g, fmt::format("every pending cell is already submitted (slurm job {}); `abtrack collect` commits the results",
                        subs.empty() ? std::string("?") : subs.back().job_id));
    return 0;
  }
  runner::LocalExecutor executor;
  if (!util::trim(ctx.plan.setup).empty()) {
    // The setup (a build) runs here, once, on the shared filesystem; a failure makes every run
    // invalid without submitting anything.
    info(g, "setup: " + ctx.plan.setup);
    auto setup = runner::run_setup(ctx.plan, executor);
    if (!setup.ok) {
      warn(setup.reason + "; every run of this invocation is recorded as invalid");
      int worst = 0;
      for (const auto& c : todo) {
        auto run = runner::run_cell(ctx.plan, c, executor, &setup);
        auto rec = journal_and_commit(ctx, draft_record(ctx, run, code_identity(ctx)));
        fmt::print("{}\n", result_line(ctx.plan, rec));
        worst = static_cast<int>(Exit::run_failed);
      }
      return worst;
    }
  }
  auto code = code_identity(ctx, dirty);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(Exit::environment, "cannot find the abtrack binary (/proc/self/exe) for the Slurm tasks");
  auto s = runner::slurm::submit(ctx.plan, todo, slurm_base(ctx), exe,
                                 {{"code_commit", code.commit}, {"code_dirty", code.dirty ? "true" : "false"},
                                  {"code_snapshot", code.snapshot}});
  fmt::print("submitted slurm job {} ({} cells)\n", s.job_id, todo.size());
  std::fflush(stdout);
  if (detach) {
    info(g, fmt::format("results go to {}; `abtrack collect` commits them", s.dir.string()));
    return 0;
  }
  CollectResult total;
  for (;;) {
    auto r = collect_submissions(ctx, g, 0);
    total.committed += r.committed;
    total.any_bad |= r.any_bad;
    if (r.waiting == 0) break;
    if (int sig = util::interrupt_signal()) {
      warn(fmt::format("interrupted by {}: cancelling slurm job {}", util::signal_name(sig), s.job_id));
      runner::slurm::cancel(s);
      auto rest = collect_loop(ctx, 15, false);
      total.any_bad |= rest.any_bad;
      throw Error(Exit::interrupted,
                  fmt::format("interrupted by {}; slurm job {} was cancelled{}", util::signal_name(sig), s.job_id,
                              rest.waiting ? "; `abtrack collect` commits what is still ending" : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return total.any_bad ? static_cast<int>(Exit::run_failed) : 0;
}

}  // namespace abtrack::cli
