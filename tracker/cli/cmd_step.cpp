// `abtrack step` and `abtrack run`: measure cells, one commit per run.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "experiment/commit_run.hpp"
#include "experiment/revision_run.hpp"
#include "experiment/rounds.hpp"
#include "experiment/scheduler.hpp"
#include "runner/environment.hpp"
#include "runner/run.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"

namespace abtrack::cli {
namespace {

// Parses --metric NAME=V[,V...] into samples.
void add_metric_option(const plan::Plan& plan, const std::string& spec,
                       std::map<std::string, std::vector<double>>& values) {
  auto eq = spec.find('=');
  if (eq == std::string::npos) throw Error(Exit::usage, fmt::format("--metric '{}' is not NAME=VALUE", spec));
  std::string name(util::trim(std::string_view(spec).substr(0, eq)));
  if (!plan.metric(name)) {
    std::vector<std::string> names;
    for (const auto& m : plan.metrics) names.push_back(m.name);
    throw Error(Exit::usage,
                fmt::format("--metric: unknown metric '{}'{}", name, util::suggestion_suffix(name, names)));
  }
  for (const auto& v : util::split(std::string_view(spec).substr(eq + 1), ',')) {
    auto x = util::parse_double(v);
    if (!x || !std::isfinite(*x))
      throw Error(Exit::usage, fmt::format("--metric {}: '{}' is not a finite number", name, v));
    values[name].push_back(*x);
  }
}

// `--rounds auto` or the plan's `rounds: auto`, with `--max-rounds` and `--budget` over the plan's.
struct RoundsArgs {
  int rounds = 1;
  bool given = false;
  bool automatic = false;
  std::optional<int> max_rounds;
  std::optional<double> budget_s;

  bool take(const std::vector<std::string>& rest, std::size_t& i) {
    if (auto v = take_value(rest, i, "--rounds")) {
      given = true;
      if (*v == "auto") {
        automatic = true;
        return true;
      }
      auto n = util::parse_double(*v);
      if (!n || *n < 1 || *n > 10000 || std::floor(*n) != *n)
        throw Error(Exit::usage, fmt::format("--rounds must be a whole number from 1 to 10000, or auto, not '{}'", *v));
      rounds = static_cast<int>(*n);
      return true;
    }
    if (auto v = take_value(rest, i, "--max-rounds")) {
      auto n = util::parse_double(*v);
      if (!n || *n < 2 || *n > 10000 || std::floor(*n) != *n)
        throw Error(Exit::usage, fmt::format("--max-rounds must be a whole number from 2 to 10000, not '{}'", *v),
                    "rounds: auto needs at least 2 rounds to see how much the rounds vary");
      max_rounds = static_cast<int>(*n);
      return true;
    }
    if (auto v = take_value(rest, i, "--budget")) {
      budget_s = util::parse_duration(*v);
      if (!budget_s)
        throw Error(Exit::usage, fmt::format("--budget must be a duration, not '{}'", *v),
                    "e.g. --budget 30m, 2h, 1h30m or 90s");
      return true;
    }
    return false;
  }
  // The auto design this invocation runs, if any; a usage error when the plan cannot decide.
  std::optional<experiment::AutoRounds> design(const plan::Plan& plan, std::uint64_t seed, bool dry_run) const {
    if (!(automatic || (plan.rounds_auto && !given))) {
      if (max_rounds || budget_s)
        throw Error(Exit::usage, "--max-rounds and --budget are for rounds: auto", "add --rounds auto");
      return std::nullopt;
    }
    if (auto problem = plan::auto_rounds_problem(plan)) throw Error(Exit::usage, problem->first, problem->second);
    experiment::AutoRounds a;
    a.max_rounds = max_rounds.value_or(plan.max_rounds);
    a.budget_s = budget_s ? budget_s : plan.budget_s;
    a.seed = seed;
    a.dry_run = dry_run;
    return a;
  }
};

// What `abtrack run` was asked.
struct RunArgs {
  RoundsArgs rounds;
  std::vector<std::string> rev_specs;  // --rev NAME=REVISION, checked against the plan
  bool all = false, detach = false, retry = false, rebuild = false;
  experiment::RunOptions opts;
  std::optional<int> jobs;
  std::optional<std::uint64_t> seed;
};

RunArgs parse_run_args(const Args& args) {
  RunArgs a;
  bool keep_going = false;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto vj = take_value(args.rest, i, "--jobs")) {
      auto n = util::parse_double(*vj);
      if (!n || *n < 1 || *n > 1024 || std::floor(*n) != *n)
        throw Error(Exit::usage, fmt::format("--jobs must be a whole number from 1 to 1024, not '{}'", *vj));
      a.jobs = static_cast<int>(*n);
    } else if (args.rest[i] == "--detach") {
      a.detach = true;
    } else if (a.rounds.take(args.rest, i)) {
    } else if (auto vr = take_value(args.rest, i, "--rev")) {
      a.rev_specs.push_back(*vr);
    } else if (auto v2 = take_value(args.rest, i, "--seed")) {
      auto n = util::parse_double(*v2);
      if (!n || *n < 0 || std::floor(*n) != *n || *n > 9e15)
        throw Error(Exit::usage, fmt::format("--seed must be a whole number, not '{}'", *v2));
      a.seed = static_cast<std::uint64_t>(*n);
    } else if (args.rest[i] == "--all") {
      a.all = true;
    } else if (args.rest[i] == "--retry") {
      a.retry = true;
    } else if (args.rest[i] == "--rebuild") {
      a.rebuild = true;
    } else if (args.rest[i] == "--keep-going") {
      keep_going = true;
    } else if (args.rest[i] == "--dry-run") {
      a.opts.dry_run = true;
    } else {
      unknown_argument("run", args.rest[i],
                       {"--rounds", "--max-rounds", "--budget", "--seed", "--all", "--jobs", "--detach", "--retry",
                        "--keep-going", "--dry-run", "--rev", "--rebuild"});
    }
  }
  a.opts.early_stop = !keep_going;
  return a;
}

// `run` for a plan with revisions: its cells here, interleaved, one at a time.
int run_with_revisions(experiment::Context& ctx, experiment::Progress& progress, const RunArgs& a,
                       const std::optional<experiment::AutoRounds>& automatic,
                       experiment::RevisionRunOptions& revision_opts) {
  if (a.detach)
    throw Error(Exit::usage,
                "--detach needs executor: slurm, and a plan with revisions: runs its cells here, interleaved");
  if (a.jobs && *a.jobs > 1)
    throw Error(Exit::usage,
                "a plan with revisions: measures one cell at a time (its revisions back to back); --jobs must be 1");
  revision_opts.rounds = a.rounds.given && !automatic ? a.rounds.rounds : 0;
  revision_opts.automatic = automatic;
  revision_opts.seed = a.seed;
  revision_opts.all = a.all;
  revision_opts.retry = a.retry;
  revision_opts.rebuild = a.rebuild;
  revision_opts.run = a.opts;
  if (!a.opts.dry_run) {  // a dry run writes nothing (see cmd_step)
    experiment::preflight(ctx, progress);
    experiment::recover_journal(ctx, progress);
  }
  return experiment::run_revisions(ctx, progress, revision_opts);
}

// Refuses the options of `run` that the plan's executor (local or Slurm) cannot honour.
void refuse_for_executor(const plan::Plan& plan, const RunArgs& a, int rounds, bool automatic) {
  if (a.rebuild)
    throw Error(Exit::usage, "--rebuild is for a plan with revisions: (it builds each revision's tree again)",
                "without revisions:, the plan's build: runs before the cells at every run");
  const bool slurm = plan.executor == plan::ExecutorKind::slurm;
  if (a.detach && !slurm)
    throw Error(Exit::usage, "--detach needs executor: slurm in the plan",
                "without Slurm, `abtrack run` runs the cells here and waits");
  if (a.jobs && slurm)
    throw Error(Exit::usage, "--jobs is for the local executor; with executor: slurm use slurm: {max_parallel: N}");
  if ((rounds > 1 || automatic) && slurm)
    throw Error(Exit::usage,
                "rounds are for the local executor; with executor: slurm each cell is one task of the job array",
                "run `abtrack run --all` again for another round");
  if (a.jobs && !plan.gpus.empty() && *a.jobs > static_cast<int>(plan.gpus.size()))
    throw Error(Exit::usage, fmt::format("--jobs {} but gpus lists {}; each running cell gets its own GPU", *a.jobs,
                                         plan.gpus.size()));
  if (a.opts.dry_run && slurm)
    throw Error(Exit::usage, "--dry-run is for the local executor; with executor: slurm every task's run is committed",
                "`abtrack step --no-commit --cell ...` runs one cell here without committing");
}

}  // namespace

int cmd_step(const Args& args) {
  std::optional<std::string> cell_spec, record_file;
  std::vector<std::string> metric_specs;
  experiment::RunOptions opts;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (args.rest[i] == "--no-commit") {
      opts.dry_run = true;
    } else if (auto v = take_value(args.rest, i, "--cell")) {
      if (cell_spec)
        throw Error(Exit::usage, "--cell given twice; a step runs one cell", "`abtrack run --all` runs every cell");
      cell_spec = v;
    } else if (auto v = take_value(args.rest, i, "--record")) {
      if (record_file) throw Error(Exit::usage, "--record given twice; a step records one run");
      record_file = v;
    } else if (auto v = take_value(args.rest, i, "--metric")) metric_specs.push_back(*v);
    else unknown_argument("step", args.rest[i], {"--cell", "--record", "--metric", "--no-commit"});
  }
  util::install_interrupt_handlers();
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  // Validate everything the user typed before anything runs or is written.
  std::optional<plan::Cell> cell;
  if (cell_spec) cell = ctx.plan.parse_cell(*cell_spec);
  std::map<std::string, std::vector<double>> values;
  for (const auto& s : metric_specs) add_metric_option(ctx.plan, s, values);
  std::optional<std::string> output;
  if (record_file) {
    std::error_code ec;
    if (!std::filesystem::exists(*record_file, ec))
      throw Error(Exit::usage, fmt::format("--record: no file {}", *record_file));
    if (!std::filesystem::is_regular_file(*record_file, ec))
      throw Error(Exit::usage, fmt::format("--record: {} is not a regular file", *record_file),
                  "save the command's output to a file first (command > out.txt), then --record out.txt");
    output = util::read_file(*record_file);
  }
  // Values given by hand name every metric the output cannot give: an incomplete one is a typing
  // mistake to fix, not an invalid run to commit.
  if (record_file || !values.empty())
    for (const auto& m : ctx.plan.metrics) {
      if (values.count(m.name)) continue;
      if (!record_file)
        throw Error(Exit::usage, fmt::format("--metric gives no value for metric '{}'", m.name),
                    fmt::format("give every metric: --metric {}=VALUE (or --record FILE)", m.name));
      if (!m.file.empty())
        throw Error(Exit::usage,
                    fmt::format("--record cannot read metric '{}': it comes from the file {}", m.name, m.file),
                    fmt::format("give its value with --metric {}=VALUE", m.name));
    }
  // A dry run writes nothing: no preflight (it may put abtrack's own output back) and no
  // recovery of journaled runs (that commits).
  bool dirty = false;
  if (!opts.dry_run) {
    dirty = experiment::preflight(ctx, progress);
    experiment::recover_journal(ctx, progress);
  }
  if (!ctx.plan.revisions.empty() && !record_file && metric_specs.empty()) {
    experiment::RevisionRunOptions revision_opts;
    revision_opts.only = cell;
    revision_opts.step = true;
    revision_opts.run = opts;
    return experiment::run_revisions(ctx, progress, revision_opts);
  }
  if (!cell) {
    auto pending = experiment::cells_to_run(ctx, false, false);
    if (pending.empty()) {
      info(args.global,
           fmt::format("every cell of {} has a run; `abtrack step --cell ...` runs one again", ctx.plan.experiment));
      return 0;
    }
    cell = pending.front();
  }
  runner::start_environment_probe();  // overlaps the command, if one runs (the record waits for it)
  int exit_code = 0;
  if (record_file || !metric_specs.empty()) {
    auto run = runner::run_from_values(ctx.plan, *cell, output, values, record_file ? "record-file" : "metric-option");
    if (opts.dry_run) {
      auto rec = experiment::compared_with_head(ctx, experiment::draft_record(ctx, progress, run, record::Code{}));
      fmt::print("{}\n", experiment::dry_result_line(ctx.plan, rec));
      return rec.data.outcome == runner::Outcome::pass ? 0 : static_cast<int>(Exit::run_failed);
    }
    auto code = experiment::code_identity(ctx, progress, dirty);
    auto rec = experiment::journal_and_commit(ctx, progress, experiment::draft_record(ctx, progress, run, code));
    fmt::print("{}\n", experiment::result_line(ctx.plan, rec));
    return rec.data.outcome == runner::Outcome::pass ? 0 : static_cast<int>(Exit::run_failed);
  }
  const auto schedule = experiment::fixed_rounds(experiment::single_units({*cell}), 1, 0, false);
  if (!ctx.plan.gpus.empty())  // the cell runs on a GPU of the plan's, as in `abtrack run`
    experiment::run_parallel(ctx, progress, schedule, 1, dirty, opts, exit_code);
  else experiment::run_serial(ctx, progress, schedule, dirty, opts, exit_code);
  return exit_code;
}

int cmd_run(const Args& args) {
  RunArgs a = parse_run_args(args);
  util::install_interrupt_handlers();
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  experiment::RevisionRunOptions revision_opts;
  for (const auto& s : a.rev_specs) experiment::add_revision_override(ctx.plan, s, revision_opts.overrides);
  if (!a.seed) a.seed = std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32);
  auto automatic = a.rounds.design(ctx.plan, *a.seed, a.opts.dry_run);
  // A dry run says, from the pools already recorded, how many rounds each design would need.
  if (a.opts.dry_run && ctx.plan.baseline)
    for (const auto& line : experiment::expected_rounds(ctx, automatic ? automatic->max_rounds : ctx.plan.max_rounds))
      info(args.global, "expected: " + line);
  const int rounds = a.rounds.given ? a.rounds.rounds : ctx.plan.rounds > 0 ? ctx.plan.rounds : 1;
  if (!ctx.plan.revisions.empty()) return run_with_revisions(ctx, progress, a, automatic, revision_opts);
  refuse_for_executor(ctx.plan, a, rounds, automatic.has_value());
  const bool slurm = ctx.plan.executor == plan::ExecutorKind::slurm;
  bool dirty = false;
  if (!a.opts.dry_run) {  // a dry run writes nothing (see cmd_step)
    dirty = experiment::preflight(ctx, progress);
    experiment::recover_journal(ctx, progress);
  }
  std::size_t failed_left = 0;
  auto cells = a.all ? ctx.plan.cells() : experiment::cells_to_run(ctx, true, a.retry, &failed_left);
  if (cells.empty() && automatic && !a.all)
    if (auto unfinished = experiment::continue_unfinished_batch(ctx, progress, *automatic))
      cells = std::move(*unfinished);
  if (cells.empty()) {
    info(args.global,
         fmt::format("every cell of {} has a valid run{}; nothing to do (--all runs every cell again)",
                     ctx.plan.experiment,
                     failed_left == 0 ? ""
                     : failed_left == 1
                         ? " (1 whose latest run failed a gate: --retry runs it again)"
                         : fmt::format(" ({} whose latest run failed a gate: --retry runs them again)", failed_left)));
    if (!slurm)  // (a Slurm job's nodes are not this machine)
      if (auto note = experiment::measured_elsewhere(ctx); !note.empty()) info(args.global, note);
    return 0;
  }
  if (rounds > 1 && !automatic)
    info(args.global, fmt::format("{} rounds of {} cells, shuffled with seed {}", rounds, cells.size(), *a.seed));
  if (slurm) return experiment::run_slurm(ctx, progress, cells, dirty, a.detach);
  runner::start_environment_probe();  // overlaps the first command (the records wait for it)
  int exit_code = 0;
  const int parallel = a.jobs.value_or(ctx.plan.jobs);
  auto run_schedule = [&](const experiment::Scheduled& s, const experiment::RunOptions& o) {
    if (parallel > 1 || !ctx.plan.gpus.empty())
      experiment::run_parallel(ctx, progress, s, parallel, dirty, o, exit_code);
    else experiment::run_serial(ctx, progress, s, dirty, o, exit_code);
  };
  if (automatic) {
    std::vector<record::Record> records;
    std::set<std::string> profiled;  // across the rounds: each cell profiled once
    int round = 0;
    experiment::run_auto_rounds(ctx, progress, experiment::single_units(cells), *automatic, records,
                                [&](const experiment::Scheduled& s) {
                                  experiment::RunOptions o = a.opts;
                                  o.records = &records;
                                  o.setup_done = ++round > 1;
                                  o.profiled = &profiled;
                                  run_schedule(s, o);
                                });
    return exit_code;
  }
  // Interleaved rounds of one invocation pair a cell with its baseline round by round.
  run_schedule(experiment::fixed_rounds(experiment::single_units(cells), rounds, *a.seed, rounds > 1), a.opts);
  return exit_code;
}

}  // namespace abtrack::cli
