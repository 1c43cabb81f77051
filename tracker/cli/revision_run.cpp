#include "cli/revision_run.hpp"

#include <algorithm>
#include <map>
#include <random>

#include <fmt/format.h>

#include "cli/commit_run.hpp"
#include "record/compare.hpp"
#include "runner/environment.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {

std::vector<std::vector<plan::Cell>> revision_groups(const plan::Plan& plan) {
  std::vector<std::vector<plan::Cell>> groups;
  std::map<std::vector<std::string>, std::size_t> index;
  for (const auto& c : plan.cells()) {
    std::vector<std::string> rest(c.values.begin() + 1, c.values.end());  // `rev` is the first axis
    auto [it, fresh] = index.emplace(std::move(rest), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(c);
  }
  return groups;
}

namespace {

// Whether the cell has a valid run on its revision's code as resolved now.
bool measured(const std::vector<record::CellRuns>& cells, const plan::Cell& cell, const Revision& rev) {
  for (const auto& c : cells)
    if (c.cell == cell)
      return std::any_of(c.runs.begin(), c.runs.end(), [&](const record::Record* r) {
        return r->data.outcome != runner::Outcome::invalid && !r->code.tree.empty() && r->code.tree == rev.code.tree;
      });
  return false;
}

}  // namespace

int run_revisions(Context& ctx, const GlobalOptions& g, const RevisionRunOptions& opts) {
  if (ctx.plan.executor == plan::ExecutorKind::slurm)
    throw Error(Exit::usage, "a plan with revisions: runs its cells here, interleaved; executor: slurm cannot interleave them",
                "remove executor: slurm, or compare the revisions in two plans");
  if (ctx.plan.jobs > 1)
    throw Error(Exit::usage, "a plan with revisions: measures one cell at a time (its revisions back to back); jobs: must be 1");
  auto revisions = resolve_revisions(ctx, opts.overrides);
  auto records = ctx.repo.with_head([&](const gitstore::TreeView& t) { return load_records(ctx, t, record::Part::header); });
  const auto cells = record::cells_with_runs(ctx.plan, records);
  std::vector<std::vector<plan::Cell>> todo;
  if (opts.group) todo.push_back(*opts.group);
  else for (auto& group : revision_groups(ctx.plan)) {
    if (opts.only) {
      if (std::find(group.begin(), group.end(), *opts.only) != group.end()) todo.push_back({*opts.only});
      continue;
    }
    bool pending = opts.all || std::any_of(group.begin(), group.end(), [&](const plan::Cell& c) {
                     return !measured(cells, c, *revision_of(ctx.plan, revisions, c));
                   });
    if (pending) todo.push_back(std::move(group));  // the whole group: its revisions pair by round
  }
  if (opts.step && !opts.only && !todo.empty()) {
    for (const auto& c : todo.front())
      if (!measured(cells, c, *revision_of(ctx.plan, revisions, c))) {
        todo = {{c}};
        break;
      }
    if (todo.front().size() > 1) todo = {{todo.front().front()}};
  }
  if (todo.empty()) {
    info(g, fmt::format("every cell of {} has a run on its revision's code; nothing to do (--all runs every cell again)",
                        ctx.plan.experiment));
    return 0;
  }
  for (const auto& r : revisions)
    info(g, fmt::format("revision {} = {} ({}{})", r.name, r.spec, r.code.commit.empty() ? "unborn" : r.code.commit.substr(0, 12),
                        r.code.snapshot.empty() ? "" : " +snapshot " + r.code.snapshot.substr(0, 12)));
  // Each revision the chosen cells need, written and built once.
  for (auto& r : revisions)
    if (std::any_of(todo.begin(), todo.end(), [&](const auto& group) {
          return std::any_of(group.begin(), group.end(), [&](const plan::Cell& c) { return c.values.front() == r.name; });
        }))
      prepare_revision(ctx, g, r);
  const int rounds = opts.only || opts.step ? 1 : opts.rounds > 0 ? opts.rounds : ctx.plan.rounds > 0 ? ctx.plan.rounds : 10;
  const std::uint64_t seed = opts.seed.value_or(std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32));
  std::mt19937_64 rng(seed);
  const std::string batch = fmt::format("{:016x}", rng());
  // Round r: the groups in a shuffled order, each group's revisions back to back, forwards in odd
  // rounds and backwards in even ones, so neither runs second (warmer) every time.
  std::vector<std::pair<plan::Cell, runner::Schedule>> schedule;
  for (int r = 1; r <= rounds; ++r) {
    std::vector<std::size_t> order(todo.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    for (std::size_t gi : order) {
      auto group = todo[gi];
      if (r % 2 == 0) std::reverse(group.begin(), group.end());
      for (auto& c : group)
        schedule.emplace_back(std::move(c), runner::Schedule{r, rounds, seed, static_cast<int>(schedule.size()) + 1, batch});
    }
  }
  info(g, fmt::format("{} round{} of {} cell{}, revisions alternating, groups shuffled with seed {}", rounds, rounds == 1 ? "" : "s",
                      schedule.size() / static_cast<std::size_t>(rounds), schedule.size() / rounds == 1 ? "" : "s", seed));
  runner::start_environment_probe();
  runner::LocalExecutor executor;
  std::optional<runner::SetupResult> setup;
  if (!util::trim(ctx.plan.setup).empty()) {
    info(g, "setup: " + ctx.plan.setup);
    setup = runner::run_setup(ctx.plan, executor);
    if (!setup->ok) warn(setup->reason + "; every run of this invocation is recorded as invalid");
  }
  int exit_code = 0;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const auto& [cell, sched] = schedule[i];
    const Revision& rev = *revision_of(ctx.plan, revisions, cell);
    info(g, fmt::format("[{}/{}] round {}/{} {}", i + 1, schedule.size(), sched.round, sched.rounds, ctx.plan.label(cell)));
    const plan::Plan p = plan_for(ctx.plan, rev);
    const runner::SetupResult* before = rev.failed_build ? &*rev.failed_build : setup ? &*setup : nullptr;
    runner::Run run;
    try {
      run = runner::run_cell(p, cell, executor, before);
    } catch (const Interrupted& e) {
      throw Error(Exit::interrupted, fmt::format("{} while running {}; nothing was recorded for it ({} of {} runs committed)",
                                                 e.diagnostics().front().message, ctx.plan.label(cell), i, schedule.size()));
    }
    run.schedule = sched;
    auto rec = draft_record(ctx, run, rev.code, &rev.dir);
    if (opts.commit) rec = journal_and_commit(ctx, rec);
    if (opts.results_to_stderr) {
      info(g, result_line(ctx.plan, rec));
    } else {
      fmt::print("{}\n", result_line(ctx.plan, rec));
      std::fflush(stdout);
    }
    if (opts.committed) opts.committed->push_back(rec);
    if (rec.data.outcome != runner::Outcome::pass) exit_code = static_cast<int>(Exit::run_failed);
  }
  return exit_code;
}

}  // namespace abtrack::cli
