#include "experiment/revision_run.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "experiment/commit_run.hpp"
#include "experiment/scheduler.hpp"
#include "record/compare.hpp"
#include "runner/environment.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::experiment {

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

// The latest run of `cell` on its revision's code as resolved now and its recipe, if any.
const record::Record* latest_on_code(const plan::Plan& plan, const std::vector<record::CellRuns>& cells,
                                     const plan::Cell& cell, const Revision& rev) {
  const std::string recipe = plan::recipe(plan, cell);
  for (const auto& c : cells)
    if (c.cell == cell)
      for (auto it = c.runs.rbegin(); it != c.runs.rend(); ++it) {
        const record::Code& code = (*it)->code;
        if (!code.tree.empty() && code.tree == rev.code.tree && (code.recipe.empty() || code.recipe == recipe))
          return *it;
      }
  return nullptr;
}

// Whether the cell still needs a run: none valid on its code (with `retry`: the latest failed a gate).
bool pending(const plan::Plan& plan, const std::vector<record::CellRuns>& cells, const plan::Cell& cell,
             const Revision& rev, bool retry) {
  const record::Record* latest = latest_on_code(plan, cells, cell, rev);
  if (!latest || latest->data.outcome == runner::Outcome::invalid) return true;
  return retry && latest->data.outcome == runner::Outcome::fail;
}

}  // namespace

int run_revisions(Context& ctx, Progress& progress, const RevisionRunOptions& opts) {
  if (ctx.plan.executor == plan::ExecutorKind::slurm)
    throw Error(Exit::usage,
                "a plan with revisions: runs its cells here, interleaved; executor: slurm cannot interleave them",
                "remove executor: slurm, or compare the revisions in two plans");
  if (ctx.plan.jobs > 1)
    throw Error(Exit::usage,
                "a plan with revisions: measures one cell at a time (its revisions back to back); jobs: must be 1");
  auto revisions = resolve_revisions(ctx, progress, opts.overrides);
  auto records =
      ctx.repo.with_head([&](const gitstore::TreeView& t) { return load_records(ctx, t, record::Part::header); });
  const auto cells = record::cells_with_runs(ctx.plan, records);
  // revision_of is never null here: the plan has revisions.
  auto needs_run = [&](const plan::Cell& c) {
    return pending(ctx.plan, cells, c, *revision_of(ctx.plan, revisions, c), opts.retry);
  };
  std::vector<std::vector<plan::Cell>> todo;
  if (opts.group) todo.push_back(*opts.group);
  else
    for (auto& group : revision_groups(ctx.plan)) {
      if (opts.only) {
        if (std::find(group.begin(), group.end(), *opts.only) != group.end()) todo.push_back({*opts.only});
        continue;
      }
      // --rev asks for that code to be measured now, whatever was measured before.
      if (opts.all || !opts.overrides.empty() || std::any_of(group.begin(), group.end(), needs_run))
        todo.push_back(std::move(group));  // the whole group: its revisions pair by round
    }
  if (opts.step && !opts.only && !todo.empty()) {
    auto first = std::find_if(todo.front().begin(), todo.front().end(), needs_run);
    todo = {{first == todo.front().end() ? todo.front().front() : *first}};
  }
  std::optional<AutoRounds> automatic = opts.automatic;
  if (todo.empty() && automatic && !opts.all && !opts.only && !opts.step && !opts.group)
    if (auto unfinished = continue_unfinished_batch(ctx, progress, *automatic))
      for (auto& group : revision_groups(ctx.plan))
        if (std::any_of(group.begin(), group.end(), [&](const plan::Cell& c) {
              return std::find(unfinished->begin(), unfinished->end(), c) != unfinished->end();
            }))
          todo.push_back(std::move(group));
  if (todo.empty()) {
    progress.info(fmt::format(
        "every cell of {} has a valid run on its revision's code; nothing to do (--all runs every cell again{})",
        ctx.plan.experiment, opts.retry ? "" : ", --retry those whose latest run failed a gate"));
    if (auto note = measured_elsewhere(ctx); !note.empty()) progress.info(note);
    return 0;
  }
  for (const auto& r : revisions)
    progress.info(fmt::format("revision {} = {} ({}{})", r.name, r.spec,
                              r.code.commit.empty() ? "unborn" : r.code.commit.substr(0, 12),
                              r.code.snapshot.empty() ? "" : " +snapshot " + r.code.snapshot.substr(0, 12)));
  // Each revision the chosen cells need, written and built once.
  for (auto& r : revisions)
    if (std::any_of(todo.begin(), todo.end(), [&](const auto& group) {
          return std::any_of(group.begin(), group.end(),
                             [&](const plan::Cell& c) { return c.values.front() == r.name; });
        }))
      prepare_revision(ctx, progress, r, opts.rebuild);
  const int rounds = opts.only || opts.step ? 1
                     : opts.rounds > 0      ? opts.rounds
                     : ctx.plan.rounds > 0  ? ctx.plan.rounds
                                            : 10;
  const std::uint64_t seed =
      opts.seed.value_or(std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32));
  RunOptions run = opts.run;
  run.revisions = &revisions;
  int exit_code = 0;
  auto measure = [&](const Scheduled& schedule, const RunOptions& o) {
    if (!ctx.plan.gpus.empty())  // the cell runs on a GPU of the plan's, as without revisions
      run_parallel(ctx, progress, schedule, 1, false, o, exit_code);
    else run_serial(ctx, progress, schedule, false, o, exit_code);
  };
  if (automatic && !opts.only && !opts.step) {
    runner::start_environment_probe();
    std::vector<record::Record> records;
    std::set<std::string> profiled;  // across the rounds: each cell profiled once
    int round = 0;
    run_auto_rounds(ctx, progress, todo, *automatic, records, [&](const Scheduled& s) {
      RunOptions o = run;
      o.records = &records;
      o.setup_done = ++round > 1;
      o.profiled = &profiled;
      measure(s, o);
    });
    return exit_code;
  }
  // Round r: the groups in a shuffled order, each group's revisions back to back, forwards in odd
  // rounds and backwards in even ones, so neither runs second (warmer) every time.
  const Scheduled schedule = fixed_rounds(todo, rounds, seed, true);
  progress.info(fmt::format("{} round{} of {} cell{}, revisions alternating, groups shuffled with seed {}", rounds,
                            rounds == 1 ? "" : "s", schedule.size() / static_cast<std::size_t>(rounds),
                            schedule.size() / rounds == 1 ? "" : "s", seed));
  runner::start_environment_probe();
  measure(schedule, run);
  return exit_code;
}

}  // namespace abtrack::experiment
