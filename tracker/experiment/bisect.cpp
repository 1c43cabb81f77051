// `abtrack bisect`'s setup and search (bisect.hpp); a step's measurement is bisect_probe.cpp's,
// the state and its files bisect_state.cpp's.
#include "experiment/bisect.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "experiment/bisect_probe.hpp"
#include "experiment/bisect_state.hpp"
#include "experiment/code_identity.hpp"
#include "experiment/commit_run.hpp"
#include "experiment/revision_run.hpp"
#include "runner/environment.hpp"
#include "stats/bisect.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::experiment {
namespace {

// Whether `e` is one of abtrack's own commits, which a bisect does not test: a run, a drop, a
// bisect step, or any commit that changes only abtrack's data (`data`: records, documents and
// plots, declared outputs), whose code is its parent's.
bool abtrack_commit(const Context& ctx, const gitstore::HistoryEntry& e, const std::vector<std::string>& data) {
  for (const char* key : {"Abtrack-Run", "Abtrack-Dropped", "Abtrack-Bisect"})
    if (!e.trailer(key).empty()) return true;
  return !e.first_parent.empty() && ctx.repo.same_tree_except(e.commit, e.first_parent, data);
}

// The paths that are not code, as folders without the trailing '/' (same_tree_except's form).
std::vector<std::string> data_folders(const Context& ctx) {
  std::vector<std::string> out;
  for (auto p : data_paths(ctx)) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    out.push_back(std::move(p));
  }
  return out;
}

// `commit`, or the newest commit of the user's below it on the first-parent chain when it is one
// of abtrack's (`--bad main` after runs were committed on main names the code main holds).
std::string users_commit(const Context& ctx, std::string commit, const std::vector<std::string>& data) {
  for (;;) {
    auto e = ctx.repo.entry(commit);
    if (!e || e->first_parent.empty() || !abtrack_commit(ctx, *e, data)) return commit;
    commit = e->first_parent;
  }
}

// The commit `spec` names, counted in the user's commits: `--good HEAD~5` stays on the same
// commit however many run and bisect commits land on HEAD meanwhile (a resumed bisect must find
// the same good and bad). A trailing chain of `~N` and `^` steps back over the user's commits
// (first parent, steps_back); the rest is resolved by git's rules and, when it names one of
// abtrack's commits, taken down to the user's commit below it. nullopt when it names no commit.
std::optional<std::string> resolve_users(const Context& ctx, const std::string& spec,
                                         const std::vector<std::string>& data) {
  auto [base, back] = steps_back(spec);
  auto commit = ctx.repo.resolve(base);
  if (!commit) return std::nullopt;
  std::string at = users_commit(ctx, *commit, data);
  for (; back > 0; --back) {
    auto e = ctx.repo.entry(at);
    if (!e || e->first_parent.empty()) return std::nullopt;
    at = users_commit(ctx, e->first_parent, data);
  }
  return at;
}

// A name for a new revision that none of `taken` is.
std::string unique_name(std::string name, const std::vector<std::string>& taken) {
  const std::string base = name;
  for (int i = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

std::string cell_without_rev(const plan::Plan& plan, const plan::Cell& cell) {
  std::vector<std::string> parts;
  for (std::size_t i = 1; i < plan.axes.size() && i < cell.values.size(); ++i)
    parts.push_back(plan.axes[i].name + "=" + cell.values[i]);
  return fmt::format("{}", fmt::join(parts, ","));
}

// The metric a bisect judges: `name` (--metric), else the plan's first with better:.
const plan::Metric& chosen_metric(const plan::Plan& plan, const std::optional<std::string>& name) {
  if (name) {
    const plan::Metric* metric = plan.metric(*name);
    std::vector<std::string> names;
    for (const auto& m : plan.metrics) names.push_back(m.name);
    if (!metric)
      throw Error(Exit::usage,
                  fmt::format("--metric: the plan has no metric '{}'{}", *name, util::suggestion_suffix(*name, names)),
                  fmt::format("the plan's metrics: {}", fmt::join(names, ", ")));
    if (metric->better == plan::Better::none)
      throw Error(Exit::usage, fmt::format("--metric {}: the metric has no better:, so nothing is worse", *name),
                  "add better: lower (or higher) to it in the plan");
    return *metric;
  }
  for (const auto& m : plan.metrics)
    if (m.better != plan::Better::none) return m;
  throw Error(Exit::usage, "bisect needs a metric with better: in the plan (or --metric NAME of one)");
}

// Sets the bisected cell of each arm (b.cells) and b.cell_text: `cell_spec` (--cell) names every
// axis but rev; without it, the plan must have one cell. `user` is the user's plan.
void choose_cells(const plan::Plan& user, Bisect& b, const std::optional<std::string>& cell_spec) {
  const plan::Plan& plan = b.plan;
  std::string rest = cell_spec.value_or("");
  for (const auto& part : util::split(rest, ','))
    if (util::trim(part.substr(0, part.find('='))) == plan::kRevAxis)
      throw Error(Exit::usage,
                  "--cell names the cell without rev: bisect sets rev itself (good, the commit tested and bad)",
                  fmt::format("drop rev= from --cell '{}'", rest));
  const auto cells = plan.cells();
  if (cell_spec) {
    for (std::size_t k = 0; k < 3; ++k) {
      auto c = plan.parse_cell(fmt::format("{}={}{}{}", plan::kRevAxis, b.names[k], rest.empty() ? "" : ",", rest));
      if (std::find(cells.begin(), cells.end(), c) == cells.end())
        throw Error(Exit::usage,
                    fmt::format("the cell {} is excluded by the plan", user.revisions.empty() ? rest : plan.label(c)));
      b.cells[k] = c;
    }
  } else {
    const auto groups = revision_groups(plan);
    if (groups.size() != 1) {
      std::vector<std::string> axes;
      for (std::size_t i = 1; i < plan.axes.size(); ++i) axes.push_back(plan.axes[i].name + "=...");
      throw Error(
          Exit::usage,
          fmt::format("bisect needs --cell: the plan has {} cells{}; name one, a value for every axis{}", groups.size(),
                      user.revisions.empty() ? "" : " for each revision", user.revisions.empty() ? "" : " but rev"),
          fmt::format("e.g. --cell {}", groups.empty() ? fmt::format("{}", fmt::join(axes, ","))
                                                       : cell_without_rev(plan, groups.front().front())));
    }
    for (std::size_t k = 0; k < 3; ++k) {
      auto found = std::find_if(groups.front().begin(), groups.front().end(),
                                [&](const plan::Cell& c) { return c.values.front() == b.names[k]; });
      if (found == groups.front().end())
        throw Error(Exit::usage, fmt::format("the plan's cell for revision {} is excluded by the plan", b.names[k]));
      b.cells[k] = *found;
    }
  }
  b.cell_text = cell_without_rev(plan, b.cells[kGood]);
}

// The bisect `options` ask for on the user's plan: its plan, metric, cell and options.
Bisect set_up(const plan::Plan& user, const BisectOptions& options) {
  Bisect b;
  b.seed = options.seed;
  b.batch_lines = options.batch_lines;
  b.max_rounds = options.max_rounds;
  if (options.budget) b.budget_s = util::parse_duration(*options.budget), b.budget_text = *options.budget;
  b.min_effect_pct = options.min_effect_pct.value_or(user.min_effect_pct);
  b.alpha = user.alpha;
  b.plan = bisect_plan(user, b.names);
  b.metric = chosen_metric(b.plan, options.metric);
  b.better = b.metric.better == plan::Better::higher ? stats::Better::higher : stats::Better::lower;
  choose_cells(user, b, options.cell);
  return b;
}

// Good and bad as the user's commits, and the user's first-parent path from good to bad.
struct Ends {
  std::string good, bad;
  std::vector<std::string> path;  // first_parent_path: abtrack's commits too
};

Ends resolve_ends(const Context& ctx, Progress& progress, const BisectOptions& options,
                  const std::vector<std::string>& data) {
  auto good_found = resolve_users(ctx, options.good_spec, data);
  auto bad_found = resolve_users(ctx, options.bad_spec, data);
  if (!good_found || !bad_found) {
    std::string which = !good_found && !bad_found
                            ? fmt::format("--good '{}' and --bad '{}' name", options.good_spec, options.bad_spec)
                        : !good_found ? fmt::format("--good '{}' names", options.good_spec)
                                      : fmt::format("--bad '{}' names", options.bad_spec);
    throw Error(Exit::usage, which + " no commit", "give a branch, tag, commit id or HEAD~N");
  }
  Ends ends{*good_found, *bad_found, {}};
  for (const auto& [option, spec, commit] :
       {std::tuple{"--good", options.good_spec, ends.good}, std::tuple{"--bad", options.bad_spec, ends.bad}})
    if (auto plain = ctx.repo.resolve(spec); plain != commit)
      progress.info(fmt::format("{} {} is your commit {} (abtrack's own commits are not counted)", option, spec,
                                named(ctx.repo, commit)));
  if (ends.good == ends.bad)
    throw Error(Exit::usage, fmt::format("--good and --bad are the same commit of yours, {}", short_id(ends.good)));
  auto full_path = ctx.repo.first_parent_path(ends.good, ends.bad);
  if (!full_path)
    throw Error(Exit::usage,
                fmt::format("--good {} ({}) is not a first-parent ancestor of --bad {} ({})", options.good_spec,
                            short_id(ends.good), options.bad_spec, short_id(ends.bad)),
                "bisect searches the first-parent history from good to bad: good must come before bad on it");
  ends.path = std::move(*full_path);
  return ends;
}

// The id of the bisect of `ends` that `b` sets up: what makes the same command find it again.
std::string bisect_id(const Bisect& b, const Ends& ends) {
  return fmt::format("{}-{}-{}", short_id(ends.good), short_id(ends.bad),
                     util::sha256_hex(fmt::format("{}\n{}\n{}\n{}\nmax_rounds {}\nbudget {}\nmin_effect {}", ends.good,
                                                  ends.bad, b.plan.label(b.cells[kGood]), b.metric.name, b.max_rounds,
                                                  b.budget_s ? util::format_number(*b.budget_s) : "none",
                                                  util::format_number(b.min_effect_pct)))
                         .substr(0, 6));
}

// One invocation of a bisect: what it measures with, where it stands, and where it tells it.
struct Session {
  Context& ctx;
  Progress& progress;
  Progress& runs;
  Bisect b;
  BisectState st;
  std::string folder;      // bisect_folder
  bool committed = false;  // the bisect was committed before this invocation
  stats::BisectSearch search{0};
};

// The state of the bisect `s.st.id`: as HEAD has it (s.committed), or new, from `ends` (the path
// without abtrack's own commits).
void load_state(Session& s, const BisectOptions& options, const Ends& ends, const std::vector<std::string>& data) {
  BisectState& st = s.st;
  const std::string state_file = s.folder + "/bisect.json";
  auto committed = s.ctx.repo.with_head([&](const gitstore::TreeView& t) { return t.read(state_file); });
  s.committed = committed.has_value();
  if (committed) {
    BisectState before = parse_state(*committed, state_file);
    st.good_spec = before.good_spec, st.bad_spec = before.bad_spec;
    st.path = std::move(before.path), st.left_out = before.left_out, st.status = before.status,
    st.steps = std::move(before.steps);
    st.plan_sha256 = before.plan_sha256;
    st.gpus = std::move(before.gpus);
  } else {
    st.gpus = runner::gpu_kinds(runner::environment().gpus);
    st.good_spec = options.good_spec, st.bad_spec = options.bad_spec;
    for (const auto& c : ends.path) {
      auto e = s.ctx.repo.entry(c);
      if (c != ends.bad && e && abtrack_commit(s.ctx, *e, data)) ++st.left_out;
      else st.path.push_back(c);
    }
  }
  st.good = ends.good, st.bad = ends.bad;
}

// Prints the steps committed before as they were, the search replayed.
void replay(Session& s) {
  for (const auto& step : s.st.steps) {
    const int total = expected_steps(s.search, step.number);
    if (step.number > 0) s.search.apply(step.index, side_of(step.like));
    s.progress.print(step_line(s.ctx.repo, s.st, step, total) + "\n");
  }
}

// Says what this invocation does: resumes (the plan changed meanwhile: a warning) or starts.
void announce(Session& s, const std::string& again) {
  const Bisect& b = s.b;
  const BisectState& st = s.st;
  if (s.committed) {
    s.progress.info(
        fmt::format("resuming bisect {} after its step {} (its log: {}/log)", st.id, st.steps.back().number, s.folder));
    if (st.plan_sha256 != b.plan.sha256)
      s.progress.warn(fmt::format(
          "{} changed since the steps before were measured: the steps to come measure with the plan as it is now ({})",
          s.ctx.plan_name, again));
  } else {
    s.progress.info(fmt::format(
        "bisect {}: good {} vs bad {}, {} on {}; {} commits of yours between them{}; {}; each step is committed to {}/",
        st.id, named(s.ctx.repo, st.good), named(s.ctx.repo, st.bad), b.metric.name,
        b.cell_text.empty() ? "the plan's cell" : b.cell_text, st.path.size(),
        st.left_out ? fmt::format(" ({} of abtrack's left out)", st.left_out) : "", options_text(b), s.folder));
  }
  if (const auto first = stats::sequential_first_look(b.alpha_step, stats::bisect_prior_g);
      static_cast<std::size_t>(b.max_rounds) < first)
    s.progress.warn(fmt::format(
        "--max-rounds {}: at alpha {} a step needs {} rounds before its interval can decide; only a metric without "
        "noise can be bisected with fewer",
        b.max_rounds, util::format_number(b.alpha_step), first));
}

// The error of an interruption while step `step` was measured (run_revisions's message counts
// committed runs, which a bisect has none of).
Error interrupted(const Session& s, int step) {
  return Error(Exit::interrupted,
               fmt::format("interrupted while measuring step {}; {}", step,
                           s.st.steps.empty() ? "nothing of this bisect was committed"
                                              : fmt::format("its steps up to {} are committed ({}/log)",
                                                            s.st.steps.back().number, s.folder)),
               "run the same abtrack bisect command again to resume");
}

// Step 0: is bad worse than good at all? Both must build. Committed; an Error(run_failed) when
// bad is not shown worse.
void measure_bad(Session& s, Budget& budget) {
  const Bisect& b = s.b;
  BisectState& st = s.st;
  BisectStep step;
  step.number = 0;
  step.commit = st.bad;
  step.index = static_cast<std::ptrdiff_t>(st.path.size()) - 1;
  s.progress.info(fmt::format("step 0: measuring bad {} against good {}", short_id(st.bad), short_id(st.good)));
  try {
    confirm(s.ctx, s.progress, s.runs, b, st.good, st.bad, budget, step);
  } catch (const Error& e) {
    if (e.code() == Exit::interrupted) throw interrupted(s, 0);
    throw;
  }
  if (step.summary.is_null() && step.like == Judgement::undecided && step.line.starts_with("no round"))
    throw Error(Exit::run_failed, fmt::format("good vs bad could not be compared on {}: {}", b.metric.name, step.line));
  st.steps.push_back(step);
  if (step.like == Judgement::good) st.status = "not worse";
  else if (step.like != Judgement::bad) st.status = "unconfirmed";
  else if (!s.search.pick()) st.status = "found";
  commit_state(s.ctx, s.progress, st, b, fmt::format("good {} vs bad {}", short_id(st.good), short_id(st.bad)));
  s.progress.print(step_line(s.ctx.repo, st, step, 0) + "\n");
  if (step.like == Judgement::good)
    throw Error(
        Exit::run_failed,
        fmt::format("bad is not worse than good on {} beyond min_effect ({}%): nothing to bisect (committed to {}/log)",
                    b.metric.name, util::format_number(b.min_effect_pct), s.folder),
        "check --good, --bad and --metric; --min-effect sets how large a change counts");
  if (step.like != Judgement::bad)
    throw Error(Exit::run_failed,
                fmt::format("{} (committed to {}/log)", result_lines(s.ctx.repo, st, b).front(), s.folder),
                fmt::format("measure more (--max-rounds, now {}; --budget), or check --good and --bad; a change within "
                            "--min-effect ({}%) does not count",
                            b.max_rounds, util::format_number(b.min_effect_pct)));
}

// The steps after step 0, each one commit, until the search is done or a step is undecided.
void measure_steps(Session& s, Budget& budget) {
  BisectState& st = s.st;
  while (auto pick = s.search.pick()) {
    BisectStep step;
    step.number = static_cast<int>(st.steps.size());
    step.index = *pick;
    step.commit = st.path[static_cast<std::size_t>(*pick)];
    const int total = expected_steps(s.search, step.number);
    s.progress.info(fmt::format("step {}/{}: measuring {} against good and bad", step.number, total,
                                named(s.ctx.repo, step.commit)));
    try {
      probe(s.ctx, s.progress, s.runs, s.b, st.good, st.bad, budget, step);
    } catch (const Error& e) {
      if (e.code() == Exit::interrupted) throw interrupted(s, step.number);
      throw;
    }
    s.search.apply(step.index, side_of(step.like));
    st.steps.push_back(step);
    st.status = status_after(s.search, step.like);
    commit_state(s.ctx, s.progress, st, s.b,
                 fmt::format("{} {}", short_id(step.commit),
                             step.like == Judgement::skip        ? "skipped"
                             : step.like == Judgement::undecided ? "undecided"
                                                                 : "like " + std::string(to_string(step.like))));
    s.progress.print(step_line(s.ctx.repo, st, step, total) + "\n");
    if (step.like == Judgement::undecided) break;
  }
  if (st.status == "measuring") {  // finished by the steps committed before (e.g. path of one commit)
    st.status = s.search.found() ? "found" : "range";
  }
}

// Prints the result and where the log is: 0 when the first bad commit was found.
int finish(Session& s) {
  std::string out;
  for (const auto& l : result_lines(s.ctx.repo, s.st, s.b)) out += l + "\n";
  s.progress.print(out + fmt::format("the bisect's log: {}/log\n", s.folder));
  return s.st.status == "found" ? 0 : static_cast<int>(Exit::run_failed);
}

}  // namespace

plan::Plan bisect_plan(const plan::Plan& user, std::array<std::string, 3>& names) {
  plan::Plan p = user;
  p.jobs = 1;  // the arms of a round run back to back
  if (user.revisions.empty()) {
    for (const auto& a : user.axes)
      if (a.name == plan::kRevAxis)
        throw Error(Exit::usage, "bisect measures the commits as values of a rev axis; the plan has an axis called rev",
                    "rename that axis (bisect adds rev: good, tested and bad)");
    names = {"good", "tested", "bad"};
    p.axes.insert(p.axes.begin(), plan::Axis{std::string(plan::kRevAxis), {names.begin(), names.end()}, {}});
    if (!util::trim(p.build).empty()) {
      if (p.setup == p.build) p.setup.clear();
      else if (p.setup.starts_with(p.build + " && ")) p.setup.erase(0, p.build.size() + 4);
    }
  } else {
    std::vector<std::string> taken;
    for (const auto& [name, _] : user.revisions) taken.push_back(name);
    names[kGood] = taken.front();
    if (user.baseline)
      for (const auto& [axis, value] : *user.baseline)
        if (axis == plan::kRevAxis) names[kGood] = value;
    // A revision the plan calls bad plays bad; else bad is new.
    const bool own_bad = names[kGood] != "bad" && std::find(taken.begin(), taken.end(), "bad") != taken.end();
    names[kBad] = own_bad ? "bad" : unique_name("bad", taken);
    names[kTested].clear();
    for (const auto& n : taken)
      if (n != names[kGood] && n != names[kBad]) {
        names[kTested] = n;
        break;
      }
    if (names[kTested].empty()) names[kTested] = unique_name("tested", taken);
    p.axes.front().values = {names.begin(), names.end()};
    // A new bad plays the tested commit's part: what the plan excludes for that, it excludes for bad.
    std::vector<plan::Assignment> more;
    for (const auto& e : own_bad ? std::vector<plan::Assignment>{} : p.exclude)
      for (const auto& [axis, value] : e)
        if (axis == plan::kRevAxis && value == names[kTested]) {
          auto copy = e;
          for (auto& kv : copy)
            if (kv.first == plan::kRevAxis) kv.second = names[kBad];
          more.push_back(std::move(copy));
        }
    p.exclude.insert(p.exclude.end(), more.begin(), more.end());
  }
  p.revisions.clear();
  for (const auto& n : names) p.revisions.emplace_back(n, "HEAD");  // every one overridden by the commit it measures
  p.baseline = plan::Assignment{{std::string(plan::kRevAxis), names[kGood]}};
  return p;
}

StepsBack steps_back(const std::string& spec) {
  std::size_t end = spec.size();
  int back = 0;
  while (end > 0) {
    std::size_t i = end;
    while (i > 0 && std::isdigit(static_cast<unsigned char>(spec[i - 1]))) --i;
    if (i > 0 && spec[i - 1] == '~') {
      back += i == end ? 1 : std::atoi(spec.substr(i, end - i).c_str());
      end = i - 1;
    } else if (i == end && spec[end - 1] == '^') {
      back += 1;
      end -= 1;
    } else if (i + 1 == end && spec[i] == '1' && i > 0 && spec[i - 1] == '^') {
      back += 1;
      end = i - 1;
    } else {
      break;
    }
  }
  if (end == 0) back = 0, end = spec.size();  // "~3" alone is no revision: let git say so
  return {spec.substr(0, end), back};
}

int bisect(Context& ctx, Progress& progress, Progress& runs, const BisectOptions& options) {
  if (ctx.plan.executor == plan::ExecutorKind::slurm)
    throw Error(Exit::usage,
                "bisect measures its rounds here, interleaved; a plan with executor: slurm cannot interleave them",
                "bisect with a copy of the plan without executor: slurm (abtrack -p COPY bisect ...)");
  Session s{ctx, progress, runs, set_up(ctx.plan, options), {}, {}};
  const std::vector<std::string> data = data_folders(ctx);
  const Ends ends = resolve_ends(ctx, progress, options, data);
  s.st.id = bisect_id(s.b, ends);
  s.folder = bisect_folder(s.b.plan, s.st.id);
  load_state(s, options, ends, data);
  s.b.alpha_step = stats::bisect_step_alpha(s.b.alpha, s.st.path.size());
  s.search = stats::BisectSearch(s.st.path.size());

  replay(s);
  const std::string again = "give other --max-rounds, --budget or --min-effect to start a new bisect";
  if (s.committed && s.st.status != "measuring") {
    progress.info(fmt::format("bisect {} finished before (its log: {}/log); {}", s.st.id, s.folder, again));
    return finish(s);
  }
  // Its steps compare with each other only on the card they were measured on (step 0 showed bad
  // worse there).
  if (const auto here = runner::gpu_kinds(runner::environment().gpus);
      s.committed && s.st.gpus && !runner::has_kinds(here, *s.st.gpus))
    throw Error(Exit::environment,
                fmt::format("bisect {} measured its steps on {}; this machine has {}", s.st.id,
                            runner::describe_kinds(*s.st.gpus), runner::describe_kinds(here)),
                fmt::format("resume it on {}, or {}", runner::describe_kinds(*s.st.gpus), again));
  announce(s, again);

  preflight(ctx, progress);
  recover_journal(ctx, progress);  // with the user's plan: what a killed `run` left is the plan's
  // From here on the runs measure with the bisect's plan: three revisions, good, tested and bad.
  ctx.plan = s.b.plan;
  Budget budget(s.b.budget_s);
  if (s.st.steps.empty()) measure_bad(s, budget);
  measure_steps(s, budget);
  return finish(s);
}

}  // namespace abtrack::experiment
