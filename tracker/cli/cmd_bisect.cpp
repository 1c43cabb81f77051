// `abtrack bisect`: the first commit between a good and a bad revision that made a cell worse,
// found by a binary search whose steps classify (stats/bisect.hpp, docs/statistics.md "Bisect as
// a classifier"). Step 0 measures bad against good, round after round, until bad is shown worse
// beyond min_effect (or not worse, or the rounds run out). Each later step measures the commit
// tested against good *and* bad in the same rounds and adds rounds until it lies clearly on one
// side of their midpoint; a step that runs out of rounds ends the bisect undecided, never guessed.
//
// The three arms run as revisions of a plan of the bisect's own (the plan's, with a `rev` axis of
// good, tested and bad; a plan without `revisions:` gets one), interleaved by run_revisions in the
// same cached trees and builds. A bisect's measurements are not runs of the plan: they are never
// committed as runs/<experiment>/NNNN.json, so the document and `check` read after a bisect what
// they read before. Each step is one commit of the bisect's own files,
// runs/<experiment>/bisect/<id>/log (for people) and bisect.json (the state and every sample, to
// re-judge or resume). The id comes from good, bad, the cell, the metric and the options: the same
// command finds its bisect in HEAD and resumes it after its last committed step, or prints its
// result when it has finished.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "experiment/code_identity.hpp"
#include "experiment/commit_run.hpp"
#include "experiment/revision_run.hpp"
#include "stats/bisect.hpp"
#include "stats/paired.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kGood = 0, kTested = 1, kBad = 2;  // the arms, as stats::ProbeArm
constexpr const char* kArmWords[] = {"good", "tested", "bad"};

struct Bisect {
  // The bisect's plan: the user's with a `rev` axis whose values are `names` (good, the commit
  // tested, bad), and `cells` the bisected cell of each.
  plan::Plan plan;
  std::array<std::string, 3> names;
  std::array<plan::Cell, 3> cells;
  std::string cell_text;  // the cell without rev ("size=small"; "" when rev is the only axis)
  plan::Metric metric;
  stats::Better better = stats::Better::lower;
  int max_rounds = 128;
  std::optional<double> budget_s;
  std::string budget_text;  // as given
  double min_effect_pct = 0.5;
  double alpha = 0.05;       // the plan's
  double alpha_step = 0.05;  // each step's (stats::bisect_step_alpha)
  std::optional<std::uint64_t> seed;
};

// How a step judged its commit.
enum class Like { good, bad, skip, undecided };

std::string_view to_string(Like l) {
  return l == Like::bad ? "bad" : l == Like::good ? "good" : l == Like::undecided ? "undecided" : "skip";
}
Like parse_like(const std::string& s) {
  return s == "bad" ? Like::bad : s == "good" ? Like::good : s == "undecided" ? Like::undecided : Like::skip;
}
std::optional<stats::Side> side_of(Like l) {
  if (l == Like::skip) return std::nullopt;
  return l == Like::bad ? stats::Side::bad : l == Like::good ? stats::Side::good : stats::Side::undecided;
}

// One measured (or skipped) commit. Step 0 is bad measured against good.
struct Step {
  int number = 0;
  std::ptrdiff_t index = -1;  // the commit's place on the path (step 0: the last, bad)
  std::string commit;
  Like like = Like::skip;
  std::string line;        // what was printed for it
  json summary = nullptr;  // the estimate (null when nothing was compared)
  json runs = json::array();
};

// A bisect as committed in runs/<experiment>/bisect/<id>/bisect.json.
struct State {
  std::string id;
  std::string good, bad, good_spec, bad_spec;
  std::vector<std::string> path;  // the commits of the user from good (excluded) to bad, oldest first
  int left_out = 0;               // abtrack's own commits left out of the path
  // Once finished: "found", "range" (skips leave several), "undecided" (a step ran out of rounds
  // or budget), "not worse" or "unconfirmed" (step 0 could not show bad worse).
  std::string status = "measuring";
  std::string plan_sha256;  // of the plan the committed steps were measured with
  std::vector<Step> steps;
};

std::string short_id(const std::string& commit) { return commit.substr(0, 7); }

std::string named(const gitstore::Repository& repo, const std::string& commit) {
  auto s = repo.subject(commit);
  return s.empty() ? short_id(commit) : short_id(commit) + " " + s;
}

std::string folder_of(const plan::Plan& plan, const std::string& id) { return plan.runs_dir() + "/bisect/" + id; }

// Whether `e` is one of abtrack's own commits, which a bisect does not test: a run, a drop, a
// bisect step, or any commit that changes only abtrack's data (`data`: records, documents and
// plots, declared outputs), whose code is its parent's.
bool abtrack_commit(const experiment::Context& ctx, const gitstore::HistoryEntry& e,
                    const std::vector<std::string>& data) {
  for (const char* key : {"Abtrack-Run", "Abtrack-Dropped", "Abtrack-Bisect"})
    if (!e.trailer(key).empty()) return true;
  return !e.first_parent.empty() && ctx.repo.same_tree_except(e.commit, e.first_parent, data);
}

// The paths that are not code, as folders without the trailing '/' (same_tree_except's form).
std::vector<std::string> data_folders(const experiment::Context& ctx) {
  std::vector<std::string> out;
  for (auto p : experiment::data_paths(ctx)) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    out.push_back(std::move(p));
  }
  return out;
}

// `commit`, or the newest commit of the user's below it on the first-parent chain when it is one
// of abtrack's (`--bad main` after runs were committed on main names the code main holds).
std::string users_commit(const experiment::Context& ctx, std::string commit, const std::vector<std::string>& data) {
  for (;;) {
    auto e = ctx.repo.entry(commit);
    if (!e || e->first_parent.empty() || !abtrack_commit(ctx, *e, data)) return commit;
    commit = e->first_parent;
  }
}

// The commit `spec` names, counted in the user's commits: `--good HEAD~5` stays on the same
// commit however many run and bisect commits land on HEAD meanwhile (a resumed bisect must find
// the same good and bad). A trailing chain of `~N` and `^` steps back over the user's commits
// (first parent); the rest is resolved by git's rules and, when it names one of abtrack's
// commits, taken down to the user's commit below it. nullopt when it names no commit.
std::optional<std::string> resolve_users(const experiment::Context& ctx, const std::string& spec,
                                         const std::vector<std::string>& data) {
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
  auto commit = ctx.repo.resolve(spec.substr(0, end));
  if (!commit) return std::nullopt;
  std::string at = users_commit(ctx, *commit, data);
  for (; back > 0; --back) {
    auto e = ctx.repo.entry(at);
    if (!e || e->first_parent.empty()) return std::nullopt;
    at = users_commit(ctx, e->first_parent, data);
  }
  return at;
}

// ---- the bisect's plan ------------------------------------------------------------------------

// A name for a new revision that none of `taken` is.
std::string unique_name(std::string name, const std::vector<std::string>& taken) {
  const std::string base = name;
  for (int i = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

// The plan the bisect measures with: the user's, its `rev` axis made of three revisions, good
// (the baseline revision), bad (the plan's revision called bad, else new) and tested (the first
// other, else new), or, for a plan without
// `revisions:`, a new `rev` axis of good, tested and bad in front of its axes, with its `build:`
// back from the setup it ran as (plan/load.cpp) to a build per code tree. Sets `names`.
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

std::string cell_without_rev(const plan::Plan& plan, const plan::Cell& cell) {
  std::vector<std::string> parts;
  for (std::size_t i = 1; i < plan.axes.size() && i < cell.values.size(); ++i)
    parts.push_back(plan.axes[i].name + "=" + cell.values[i]);
  return fmt::format("{}", fmt::join(parts, ","));
}

// ---- measuring --------------------------------------------------------------------------------

// The wall time spent and allowed (--budget), and what an invocation has cost so far.
class Budget {
 public:
  Budget(std::optional<double> limit_s) : m_start(Clock::now()), m_limit_s(limit_s) {}
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - m_start).count(); }
  // Whether `invocations` more may start: not once the budget is spent, nor when what they are
  // expected to take (at the mean cost so far) would overrun it.
  bool allows(std::size_t invocations) const {
    if (!m_limit_s) return true;
    const double now = elapsed_s();
    if (now >= *m_limit_s) return false;
    return m_invocations == 0 ||
           now + m_seconds / static_cast<double>(m_invocations) * static_cast<double>(invocations) <= *m_limit_s;
  }
  void spent(std::size_t invocations, double seconds) {
    m_invocations += invocations;
    m_seconds += seconds;
  }

 private:
  Clock::time_point m_start;
  std::optional<double> m_limit_s;
  std::size_t m_invocations = 0;
  double m_seconds = 0;
};

// What one step measured.
struct Measured {
  std::vector<record::Record> runs;
  std::size_t invocations = 0;
  double seconds = 0;
  std::string invalid;  // the first invalid run's reason
};

// The arm (kGood, kTested, kBad) a run measured, or -1.
int arm_of(const Bisect& b, const record::Record& r) {
  for (const auto& [axis, value] : r.cell)
    if (axis == plan::kRevAxis)
      for (std::size_t k = 0; k < 3; ++k)
        if (value == b.names[k]) return static_cast<int>(k);
  return -1;
}

// Measures the cells of `arms` (in that order, reversed every other round) for `n` rounds,
// `commits` naming the commit of each arm, without committing a run. Appends the runs to `m` and
// returns, per complete round (every arm a valid run with samples of the metric), the samples of
// each arm in the order of `arms`.
std::vector<std::vector<std::vector<double>>> measure(experiment::Context& ctx, const GlobalOptions& g, const Bisect& b,
                                                      const std::array<std::string, 3>& commits,
                                                      const std::vector<std::size_t>& arms, std::size_t n,
                                                      std::uint64_t seed_offset, Budget& budget, Measured& m) {
  experiment::RevisionRunOptions opts;
  for (std::size_t k = 0; k < 3; ++k) opts.overrides[b.names[k]] = commits[k];
  opts.rounds = static_cast<int>(n);
  if (b.seed) opts.seed = *b.seed + seed_offset;
  std::vector<plan::Cell> group;
  for (std::size_t k : arms) group.push_back(b.cells[k]);
  opts.group = group;
  std::vector<record::Record> runs;
  opts.run.results_as_info = true;
  opts.run.records = &runs;
  opts.run.commit = false;
  GlobalOptions quiet = g;  // the bisect prints its own progress, a line per batch
  quiet.quiet = true;
  TerminalProgress progress(quiet);
  const auto start = Clock::now();
  experiment::run_revisions(ctx, progress,
                            opts);  // its exit code: a failed or invalid run, judged below from the records
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  budget.spent(runs.size(), seconds);
  m.invocations += runs.size();
  m.seconds += seconds;

  std::map<int, std::vector<std::optional<std::vector<double>>>> by_round;
  for (const auto& r : runs) {
    const int arm = arm_of(b, r);
    auto at = std::find(arms.begin(), arms.end(), static_cast<std::size_t>(arm));
    if (arm < 0 || at == arms.end() || !r.data.schedule) continue;
    auto& round = by_round[r.data.schedule->round];
    round.resize(arms.size());
    if (r.data.outcome == runner::Outcome::invalid) {
      if (m.invalid.empty()) m.invalid = fmt::format("{}'s run: {}", kArmWords[arm], r.data.reason);
      continue;
    }
    auto s = r.data.samples.find(b.metric.name);
    if (s == r.data.samples.end() || s->second.empty()) {
      if (m.invalid.empty()) m.invalid = fmt::format("{}'s run gave no sample of {}", kArmWords[arm], b.metric.name);
      continue;
    }
    round[static_cast<std::size_t>(at - arms.begin())] = s->second;
  }
  m.runs.insert(m.runs.end(), std::make_move_iterator(runs.begin()), std::make_move_iterator(runs.end()));
  std::vector<std::vector<std::vector<double>>> out;
  for (auto& [_, round] : by_round) {
    if (!std::all_of(round.begin(), round.end(), [](const auto& x) { return x.has_value(); })) continue;
    std::vector<std::vector<double>> arms_samples;
    for (auto& x : round) arms_samples.push_back(std::move(*x));
    out.push_back(std::move(arms_samples));
  }
  return out;
}

// Runs the statistics on samples abtrack did not check for positivity: a metric that is not a
// time or a rate (a sample <= 0) cannot be bisected by ratios.
template <class F>
auto positive_only(const Bisect& b, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.code() != Exit::usage || e.diagnostics().empty()) throw;
    throw Error(Exit::usage,
                fmt::format("bisect judges {} by the ratios of its samples: {}", b.metric.name,
                            e.diagnostics().front().message),
                "bisect a metric whose samples are positive (a time, a rate)");
  }
}

// ---- describing -------------------------------------------------------------------------------

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:+.1f}%", v) : v > 0 ? "+inf%" : "-inf%"; }

std::string ci_pct(const stats::Interval& ci) {
  return ci.bounded() ? fmt::format("CI [{}, {}]", pct(ci.lo), pct(ci.hi)) : std::string("CI unbounded");
}

std::string amount(std::size_t rounds, std::size_t invocations, double seconds) {
  return fmt::format("{} round{} ({} invocations, {} s)", rounds, rounds == 1 ? "" : "s", invocations,
                     util::format_number(std::round(seconds * 10) / 10));
}

// " (2 rounds set aside: an outlier invocation)", or "".
std::string set_aside_text(std::size_t n) {
  return n == 0 ? "" : fmt::format(" ({} round{} set aside: an outlier invocation)", n, n == 1 ? "" : "s");
}

// "+29.8% vs good, CI [+25.2%, +34.5%]; θ 0.99 [0.83, 1.15]" (exact: no interval).
std::string describe(const stats::ProbeEstimate& e) {
  std::string theta = std::isnan(e.theta) ? std::string("θ none (bad not worse in these rounds)")
                      : e.exact           ? fmt::format("θ {:.2f} (exact)", e.theta)
                      : e.theta_ci.bounded()
                          ? fmt::format("θ {:.2f} [{:.2f}, {:.2f}]", e.theta, e.theta_ci.lo, e.theta_ci.hi)
                          : fmt::format("θ {:.2f} [unbounded]", e.theta);
  return fmt::format("{} vs good, {}; {}", pct(e.change_pct), e.exact ? std::string("exact") : ci_pct(e.change_ci_pct),
                     theta);
}

std::string describe(const stats::Comparison& c) {
  return fmt::format("{} vs good, {}", pct(c.delta_pct), c.exact ? std::string("exact") : ci_pct(c.delta_ci_pct));
}

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json pair(const stats::Interval& ci) { return json::array({num(ci.lo), num(ci.hi)}); }

std::string_view to_string(stats::StopReason s) {
  switch (s) {
    case stats::StopReason::decided: return "decided";
    case stats::StopReason::max_rounds: return "max_rounds";
    case stats::StopReason::budget: return "budget";
    case stats::StopReason::no_rounds: return "no_rounds";
  }
  return "decided";
}

// The median of every sample of arm `k` in the runs.
double median_of(const Bisect& b, const std::vector<record::Record>& runs, std::size_t k) {
  std::vector<double> x;
  for (const auto& r : runs)
    if (arm_of(b, r) == static_cast<int>(k) && r.data.outcome != runner::Outcome::invalid)
      if (auto s = r.data.samples.find(b.metric.name); s != r.data.samples.end())
        x.insert(x.end(), s->second.begin(), s->second.end());
  if (x.empty()) return std::nan("");
  std::sort(x.begin(), x.end());
  const std::size_t h = x.size() / 2;
  return x.size() % 2 ? x[h] : (x[h - 1] + x[h]) / 2;
}

// The raw measurement of each run, enough to judge the step again.
json runs_of(const Bisect& b, const std::vector<record::Record>& runs) {
  json out = json::array();
  for (const auto& r : runs) {
    const int arm = arm_of(b, r);
    json j = {{"rev", arm < 0 ? "?" : kArmWords[arm]},
              {"commit", r.code.commit},
              {"tree", r.code.tree},
              {"outcome", std::string(runner::to_string(r.data.outcome))},
              {"samples", r.data.samples}};
    if (r.data.schedule) {
      j["batch"] = r.data.schedule->batch;
      j["round"] = r.data.schedule->round;
    }
    if (!r.data.reason.empty()) j["reason"] = r.data.reason;
    out.push_back(std::move(j));
  }
  return out;
}

// ---- the steps --------------------------------------------------------------------------------

// Builds revision `name` as `overrides` resolve it (cached by its tree and the build command):
// the failed build's log (or its reason), or "" when it built.
std::string build_failure(experiment::Context& ctx, const GlobalOptions& g,
                          const std::map<std::string, std::string>& overrides, const std::string& name) {
  TerminalProgress progress(g);
  auto revisions = experiment::resolve_revisions(ctx, progress, overrides);
  for (auto& r : revisions)
    if (r.name == name) {
      experiment::prepare_revision(ctx, progress, r);
      if (!r.failed_build) return {};
      const std::string& reason = r.failed_build->reason;
      auto log = reason.rfind("(log: ");
      return log == std::string::npos ? reason : reason.substr(log + 1, reason.size() - log - 2);
    }
  return {};
}

std::map<std::string, std::string> overrides_of(const Bisect& b, const std::array<std::string, 3>& commits) {
  return {{b.names[kGood], commits[kGood]}, {b.names[kTested], commits[kTested]}, {b.names[kBad], commits[kBad]}};
}

// Step 0: bad against good, rounds added until bad is shown worse beyond min_effect, or not
// worse, or the rounds (budget) run out. Both are built first; either failing is an error.
void confirm(experiment::Context& ctx, const GlobalOptions& g, const Bisect& b, const std::string& good,
             const std::string& bad, Budget& budget, Step& s) {
  const std::array<std::string, 3> commits{good, bad, bad};
  for (std::size_t k : {kGood, kBad})
    if (auto failed = build_failure(ctx, g, overrides_of(b, commits), b.names[k]); !failed.empty())
      throw Error(Exit::run_failed, fmt::format("{} {} does not build: {}", kArmWords[k], short_id(commits[k]), failed),
                  "bisect needs good and bad to build");
  stats::CompareOptions o;
  o.better = b.better;
  o.alpha = b.alpha_step;
  o.min_effect = b.min_effect_pct / 100;
  o.sequential = true;
  Measured m;
  std::size_t complete = 0;  // rounds that measured both
  auto result = positive_only(b, [&] {
    return stats::confirm_until_decided(
        [&](std::size_t batch, std::size_t n, std::vector<stats::RoundPair>& rounds) {
          if (!budget.allows(2 * n)) return false;
          for (auto& r : measure(ctx, g, b, commits, {kGood, kBad}, n, batch, budget, m))
            rounds.push_back({std::move(r[0]), std::move(r[1])});
          complete = rounds.size();
          if (!g.quiet && !rounds.empty()) {
            const auto c = stats::compare_paired(rounds, o);
            info(g,
                 fmt::format("good vs bad: {} after {}", describe(c), amount(rounds.size(), m.invocations, m.seconds)));
          }
          return true;
        },
        o, static_cast<std::size_t>(b.max_rounds));
  });
  s.runs = runs_of(b, m.runs);
  if (result.stop == stats::StopReason::no_rounds || result.batches == 0) {
    s.like = Like::undecided;
    s.line = result.batches == 0
                 ? fmt::format("not measured: the budget ({}) was spent", b.budget_text)
                 : fmt::format("no round measured both: {}", m.invalid.empty() ? "no valid run" : m.invalid);
    return;
  }
  const stats::Comparison& c = result.estimate;
  const auto conclusion = stats::confirm_regression(c);
  s.like = conclusion == stats::Confirmation::worse       ? Like::bad
           : conclusion == stats::Confirmation::not_worse ? Like::good
                                                          : Like::undecided;
  const std::size_t rounds = c.pairs, set_aside = complete - std::min(complete, rounds);
  s.summary = {{"metric", b.metric.name},
               {"unit", b.metric.unit},
               {"median_good", num(median_of(b, m.runs, kGood))},
               {"median_bad", num(median_of(b, m.runs, kBad))},
               {"delta_pct", num(c.delta_pct)},
               {"delta_pct_ci", pair(c.delta_ci_pct)},
               {"exact", c.exact},
               {"verdict", std::string(stats::to_string(c.verdict))},
               {"conclusion", std::string(stats::to_string(conclusion))},
               {"p", c.p_value ? num(*c.p_value) : json(nullptr)},
               {"basis", c.basis},
               {"alpha", b.alpha_step},
               {"min_effect_pct", b.min_effect_pct},
               {"rounds", rounds},
               {"set_aside", set_aside},
               {"invocations", m.invocations},
               {"seconds", m.seconds},
               {"stop", std::string(to_string(result.stop))}};
  const std::string what =
      conclusion == stats::Confirmation::worse ? "worse"
      : conclusion == stats::Confirmation::not_worse
          ? fmt::format("not worse (within min_effect {}% or better)", util::format_number(b.min_effect_pct))
      : result.stop == stats::StopReason::budget ? "undecided (the budget is spent)"
                                                 : "undecided (--max-rounds reached)";
  s.line =
      fmt::format("{} {}, {}, {}{}", pct(c.delta_pct), what, c.exact ? std::string("exact") : ci_pct(c.delta_ci_pct),
                  amount(rounds, m.invocations, m.seconds), set_aside_text(set_aside));
}

// A later step: builds `s.commit` first (one that does not build is skipped at once, nothing
// measured), then measures it against good and bad in the same rounds, rounds added until it lies
// on one side of their midpoint (like good, like bad) or the rounds (budget) run out (undecided).
// A step whose runs give no complete round is skipped.
void probe(experiment::Context& ctx, const GlobalOptions& g, const Bisect& b, const std::string& good,
           const std::string& bad, Budget& budget, Step& s) {
  const std::array<std::string, 3> commits{good, s.commit, bad};
  if (auto failed = build_failure(ctx, g, overrides_of(b, commits), b.names[kTested]); !failed.empty()) {
    s.like = Like::skip;
    s.line = "skipped: does not build (" + failed + ")";
    return;
  }
  Measured m;
  auto result = positive_only(b, [&] {
    return stats::probe_until_decided(
        [&](std::size_t batch, std::size_t n, std::vector<stats::ProbeRound>& rounds) {
          if (!budget.allows(3 * n)) return false;
          std::vector<std::size_t> arms;
          for (auto a : stats::probe_order(batch)) arms.push_back(static_cast<std::size_t>(a));
          for (auto& r :
               measure(ctx, g, b, commits, arms, n, static_cast<std::uint64_t>(s.number) * 1000 + batch, budget, m)) {
            stats::ProbeRound p;
            for (std::size_t i = 0; i < 3; ++i)
              (arms[i] == kGood ? p.good : arms[i] == kTested ? p.tested : p.bad) = std::move(r[i]);
            rounds.push_back(std::move(p));
          }
          if (!g.quiet && !rounds.empty()) {
            const auto e = stats::classify_probe(rounds, b.better, b.alpha_step);
            info(g, fmt::format("{}: {} after {}: {}", short_id(s.commit), describe(e),
                                amount(rounds.size(), m.invocations, m.seconds),
                                e.side == stats::Side::undecided ? "measuring on"
                                                                 : "like " + std::string(stats::to_string(e.side))));
          }
          return true;
        },
        b.better, b.alpha_step, static_cast<std::size_t>(b.max_rounds));
  });
  s.runs = runs_of(b, m.runs);
  if (result.stop == stats::StopReason::no_rounds) {
    s.like = Like::skip;
    s.line =
        "skipped: no round measured all three (" + (m.invalid.empty() ? std::string("no valid run") : m.invalid) + ")";
    return;
  }
  const stats::ProbeEstimate& e = result.estimate;
  s.like = e.side == stats::Side::bad ? Like::bad : e.side == stats::Side::good ? Like::good : Like::undecided;
  s.summary = {{"metric", b.metric.name},
               {"unit", b.metric.unit},
               {"median_good", num(median_of(b, m.runs, kGood))},
               {"median_tested", num(median_of(b, m.runs, kTested))},
               {"median_bad", num(median_of(b, m.runs, kBad))},
               {"delta_pct", num(e.change_pct)},
               {"delta_pct_ci", pair(e.change_ci_pct)},
               {"full_pct", num(e.full_pct)},
               {"theta", num(e.theta)},
               {"theta_ci", pair(e.theta_ci)},
               {"contrast", num(e.contrast)},
               {"contrast_ci", pair(e.contrast_ci)},
               {"exact", e.exact},
               {"side", std::string(stats::to_string(e.side))},
               {"alpha", b.alpha_step},
               {"rounds", e.rounds},
               {"set_aside", e.set_aside},
               {"invocations", m.invocations},
               {"seconds", m.seconds},
               {"stop", std::string(to_string(result.stop))}};
  if (result.batches == 0) {
    s.line = fmt::format("undecided: not measured, the budget ({}) was spent", b.budget_text);
    return;
  }
  const std::string why = e.side != stats::Side::undecided ? ""
                          : result.stop == stats::StopReason::budget
                              ? " (the budget is spent)"
                              : fmt::format(" (--max-rounds {} reached; {})", b.max_rounds, e.why);
  s.line = fmt::format("{}: {}; {}{}{}", stats::to_string(e.side), describe(e),
                       amount(e.rounds, m.invocations, m.seconds), set_aside_text(e.set_aside), why);
}

// ---- the search ---------------------------------------------------------------------------

int ceil_log2(std::ptrdiff_t n) {
  int k = 0;
  while ((std::ptrdiff_t{1} << k) < n) ++k;
  return k;
}

// The search with the steps of `st` applied (step 0 tests bad itself: nothing to apply).
stats::BisectSearch search_of(const State& st) {
  stats::BisectSearch search(st.path.size());
  for (const auto& s : st.steps)
    if (s.number > 0) search.apply(s.index, side_of(s.like));
  return search;
}

// ---- the committed files -------------------------------------------------------------------

json to_json(const State& st, const Bisect& b) {
  json steps = json::array();
  for (const auto& s : st.steps)
    steps.push_back({{"step", s.number},
                     {"commit", s.commit},
                     {"index", s.index},
                     {"judgement", std::string(to_string(s.like))},
                     {"line", s.line},
                     {"summary", s.summary},
                     {"runs", s.runs}});
  return {{"abtrack_bisect", 2},
          {"id", st.id},
          {"experiment", b.plan.experiment},
          {"plan_sha256", b.plan.sha256},
          {"good", {{"commit", st.good}, {"spec", st.good_spec}}},
          {"bad", {{"commit", st.bad}, {"spec", st.bad_spec}}},
          {"revisions", {{"good", b.names[kGood]}, {"tested", b.names[kTested]}, {"bad", b.names[kBad]}}},
          {"cell", b.cell_text},
          {"metric", b.metric.name},
          {"max_rounds", b.max_rounds},
          {"budget_s", b.budget_s ? json(*b.budget_s) : json(nullptr)},
          {"min_effect_pct", b.min_effect_pct},
          {"alpha", b.alpha},
          {"alpha_step", b.alpha_step},
          {"prior_g", stats::bisect_prior_g},
          {"path", st.path},
          {"left_out", st.left_out},
          {"status", st.status},
          {"steps", std::move(steps)}};
}

// The state committed at `file`. Throws Error(environment) when it does not read as one.
State parse_state(const std::string& text, const std::string& file) {
  State st;
  try {
    json j = json::parse(text);
    st.id = j.at("id").get<std::string>();
    st.good = j.at("good").at("commit").get<std::string>();
    st.bad = j.at("bad").at("commit").get<std::string>();
    st.good_spec = j.at("good").value("spec", "");
    st.bad_spec = j.at("bad").value("spec", "");
    st.path = j.at("path").get<std::vector<std::string>>();
    st.left_out = j.value("left_out", 0);
    st.status = j.at("status").get<std::string>();
    st.plan_sha256 = j.value("plan_sha256", "");
    for (const auto& s : j.at("steps")) {
      Step step;
      step.number = s.at("step").get<int>();
      step.commit = s.at("commit").get<std::string>();
      step.index = s.at("index").get<std::ptrdiff_t>();
      step.like = parse_like(s.at("judgement").get<std::string>());
      step.line = s.at("line").get<std::string>();
      step.summary = s.value("summary", json(nullptr));
      step.runs = s.value("runs", json::array());
      if (step.number != static_cast<int>(st.steps.size()) || step.index < 0 ||
          step.index >= static_cast<std::ptrdiff_t>(st.path.size()) ||
          st.path[static_cast<std::size_t>(step.index)] != step.commit)
        throw Error(Exit::environment, fmt::format("step {} does not fit the path", step.number));
      st.steps.push_back(std::move(step));
    }
  } catch (const json::exception& e) {
    throw Error(Exit::environment, fmt::format("{} is not a bisect abtrack can read: {}", file, e.what()),
                "give other --max-rounds to start a new bisect, or remove the folder (git rm -r) and run again");
  }
  return st;
}

// The printed line of a step ("step 2/3: 1a2b3c4 subject: bad: ...").
std::string step_line(const gitstore::Repository& repo, const State& st, const Step& s, int total) {
  if (s.number == 0) return fmt::format("good {} vs bad {}: {}", short_id(st.good), short_id(st.bad), s.line);
  return fmt::format("step {}/{}: {}: {}", s.number, total, named(repo, s.commit), s.line);
}

// "12 rounds (36 invocations, 8.1 s)" from a step's summary.
std::string amount_of(const json& summary) {
  if (!summary.is_object()) return "0 rounds";
  return amount(summary.value("rounds", std::size_t{0}), summary.value("invocations", std::size_t{0}),
                summary.value("seconds", 0.0));
}

std::string ci_of(const json& summary, const char* key) {
  const json& ci = summary.is_object() && summary.contains(key) ? summary[key] : json(nullptr);
  if (!ci.is_array() || ci.size() != 2 || !ci[0].is_number() || !ci[1].is_number()) return "[unbounded]";
  return fmt::format("[{}, {}]", pct(ci[0].get<double>()), pct(ci[1].get<double>()));
}

// The result lines of a finished bisect.
std::vector<std::string> result_lines(const gitstore::Repository& repo, const State& st, const Bisect& b) {
  if (st.status == "not worse")
    return {fmt::format("bad is not worse than good on {} beyond min_effect ({}%): nothing to bisect", b.metric.name,
                        util::format_number(b.min_effect_pct))};
  if (st.status == "unconfirmed") {
    const json& m = st.steps.front().summary;
    const bool measured = m.is_object() && m["delta_pct"].is_number();
    return {fmt::format(
        "could not confirm that bad {} is worse than good {} on {} after {}{}", short_id(st.bad), short_id(st.good),
        b.metric.name, amount_of(m),
        measured ? fmt::format(": the change is {} {}", pct(m["delta_pct"].get<double>()), ci_of(m, "delta_pct_ci"))
                 : "")};
  }
  const stats::BisectSearch search = search_of(st);
  if (st.status == "undecided") {
    const Step& last = st.steps.back();
    const std::string from = search.lo < 0 ? st.good : st.path[static_cast<std::size_t>(search.lo)];
    const std::string to = st.path[static_cast<std::size_t>(search.hi)];
    return {
        fmt::format("undecided between {} and {}: the first bad commit is after the first and at or before the second",
                    named(repo, from), named(repo, to)),
        fmt::format("step {} could not place {} on either side of the midpoint of good and bad after {}", last.number,
                    short_id(last.commit), amount_of(last.summary))};
  }
  if (search.found()) {
    const auto& c = st.path[static_cast<std::size_t>(search.hi)];
    return {fmt::format("first bad commit: {} {}", c, repo.subject(c))};
  }
  std::vector<std::string> out{"first bad commit: one of these (skipped commits leave it ambiguous):"};
  for (std::ptrdiff_t i = search.lo + 1; i <= search.hi; ++i) {
    const auto& c = st.path[static_cast<std::size_t>(i)];
    out.push_back(fmt::format("  {} {}", c, repo.subject(c)));
  }
  return out;
}

std::string options_text(const Bisect& b) {
  return fmt::format("at most {} rounds a step{}, alpha {} ({} a step), min_effect {}%", b.max_rounds,
                     b.budget_s ? ", budget " + b.budget_text : "", util::format_number(b.alpha),
                     util::format_number(b.alpha_step), util::format_number(b.min_effect_pct));
}

// The log for people, like `git bisect log`: what was bisected, each step with its measurement
// and judgement, and the result.
std::string log_text(const gitstore::Repository& repo, const State& st, const Bisect& b) {
  std::string out =
      fmt::format("# abtrack bisect {} of experiment {} ({})\n", st.id, b.plan.experiment, folder_of(b.plan, st.id));
  out += fmt::format("# good: {} {} (--good {})\n", st.good, repo.subject(st.good), st.good_spec);
  out += fmt::format("# bad:  {} {} (--bad {})\n", st.bad, repo.subject(st.bad), st.bad_spec);
  out += fmt::format("# metric {} (better {}), cell {}\n", b.metric.name,
                     b.metric.better == plan::Better::higher ? "higher" : "lower",
                     b.cell_text.empty() ? "(rev only)" : b.cell_text);
  out += fmt::format("# {}\n", options_text(b));
  out += fmt::format("# revisions {}, {} and {} play good, the commit tested and bad\n", b.names[kGood],
                     b.names[kTested], b.names[kBad]);
  out += fmt::format(
      "# {} commit{} of yours from good to bad{}\n", st.path.size(), st.path.size() == 1 ? "" : "s",
      st.left_out ? fmt::format(" ({} commit{} of abtrack's left out)", st.left_out, st.left_out == 1 ? "" : "s") : "");
  for (const auto& s : st.steps) {
    out += "\n";
    out += s.number == 0 ? fmt::format("step 0 good vs bad {}\n", named(repo, s.commit))
                         : fmt::format("step {} {}\n", s.number, named(repo, s.commit));
    if (s.summary.is_object()) {
      const json& m = s.summary;
      auto val = [&](const char* key) {
        return m.contains(key) && m[key].is_number() ? util::format_number(m[key].get<double>()) : std::string("-");
      };
      const std::string unit = m.value("unit", "").empty() ? "" : " " + m.value("unit", "");
      out += s.number == 0
                 ? fmt::format("  median good {}{}, bad {}{}\n", val("median_good"), unit, val("median_bad"), unit)
                 : fmt::format("  median good {}{}, tested {}{}, bad {}{}\n", val("median_good"), unit,
                               val("median_tested"), unit, val("median_bad"), unit);
    }
    out += "  " + s.line + "\n";
    out += fmt::format("  judged: {}\n", to_string(s.like));
  }
  out += "\n";
  if (st.status == "measuring") {
    out += "# unfinished: the same abtrack bisect command resumes it\n";
  } else {
    for (const auto& l : result_lines(repo, st, b)) out += l + "\n";
  }
  return out;
}

// Commits the state and its log as the next step of the bisect: one commit, on HEAD's branch.
void commit_state(experiment::Context& ctx, const State& st, const Bisect& b, const std::string& subject) {
  const std::string folder = folder_of(b.plan, st.id);
  const std::string state_file = folder + "/bisect.json";
  const std::string text = to_json(st, b).dump(1) + "\n";
  const std::string log = log_text(ctx.repo, st, b);
  const Step& last = st.steps.back();
  auto result = ctx.repo.commit([&](const gitstore::TreeView& tip) {
    // Another abtrack bisect with the same arguments may have committed meanwhile.
    std::size_t before = 0;
    if (auto have = tip.read(state_file)) before = parse_state(*have, state_file).steps.size();
    if (before != st.steps.size() - 1)
      throw Error(Exit::environment,
                  fmt::format("{} changed while step {} was measured (another abtrack bisect with the same arguments?)",
                              state_file, last.number),
                  "run the bisect again: it resumes from the last step committed");
    gitstore::Change change;
    change.message = fmt::format(
        "abtrack({}): bisect {} step {}: {}\n\n{}\n\nAbtrack-Experiment: {}\nAbtrack-Bisect: {}\nAbtrack-Bisect-Step: {}\n",
        b.plan.experiment, st.id, last.number, subject, last.line, b.plan.experiment, st.id, last.number);
    change.files.emplace_back(folder + "/log", log);
    change.files.emplace_back(state_file, text);
    return change;
  });
  for (const auto& p : result.kept_edits)
    warn(fmt::format("{} in the work tree is not what the bisect committed; your version is kept (git diff {})", p, p));
}

// ---- options ------------------------------------------------------------------------------

}  // namespace

int cmd_bisect(const Args& args) {
  std::optional<std::string> good_spec, bad_spec, cell_spec, metric_name, budget_text;
  std::optional<int> max_rounds;
  std::optional<double> min_effect;
  std::optional<std::uint64_t> seed;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto v = take_value(args.rest, i, "--good")) {
      good_spec = *v;
    } else if (auto v1 = take_value(args.rest, i, "--bad")) {
      bad_spec = *v1;
    } else if (auto v2 = take_value(args.rest, i, "--cell")) {
      cell_spec = *v2;
    } else if (auto v3 = take_value(args.rest, i, "--metric")) {
      metric_name = *v3;
    } else if (auto v4 = take_value(args.rest, i, "--max-rounds")) {
      auto n = util::parse_double(*v4);
      if (!n || *n < 2 || *n > 10000 || std::floor(*n) != *n)
        throw Error(
            Exit::usage, fmt::format("--max-rounds must be a whole number from 2 to 10000, not '{}'", *v4),
            "the most rounds a step measures before it gives up (default 128); one round cannot tell a change from noise");
      max_rounds = static_cast<int>(*n);
    } else if (auto v4r = take_value(args.rest, i, "--rounds")) {
      auto n = util::parse_double(*v4r);
      if (!n || *n < 2 || *n > 10000 || std::floor(*n) != *n)
        throw Error(Exit::usage,
                    fmt::format("--rounds (now --max-rounds) must be a whole number from 2 to 10000, not '{}'", *v4r),
                    "the most rounds a step measures before it gives up (default 128)");
      warn("--rounds is now --max-rounds: the most rounds a step measures (it stops as soon as it is decided)");
      max_rounds = static_cast<int>(*n);
    } else if (auto v5 = take_value(args.rest, i, "--budget")) {
      if (!util::parse_duration(*v5))
        throw Error(Exit::usage, fmt::format("--budget '{}' is not a duration", *v5),
                    "the wall time the bisect may take, e.g. --budget 90s, 30m, 2h or 1h30m");
      budget_text = *v5;
    } else if (auto v6 = take_value(args.rest, i, "--min-effect")) {
      std::string_view text = *v6;
      if (text.ends_with('%')) text.remove_suffix(1);
      const auto p = util::parse_double(text);
      if (!p || !(*p >= 0 && *p < 100))
        throw Error(Exit::usage, fmt::format("--min-effect '{}' is not a percentage from 0% to below 100%", *v6),
                    "how much worse bad must be than good to bisect, e.g. --min-effect 2%");
      min_effect = *p;
    } else if (auto v7 = take_value(args.rest, i, "--seed")) {
      auto n = util::parse_double(*v7);
      if (!n || *n < 0 || std::floor(*n) != *n || *n > 9e15)
        throw Error(Exit::usage, fmt::format("--seed must be a whole number, not '{}'", *v7));
      seed = static_cast<std::uint64_t>(*n);
    } else {
      unknown_argument("bisect", args.rest[i],
                       {"--good", "--bad", "--cell", "--metric", "--max-rounds", "--budget", "--min-effect", "--seed"});
    }
  }
  if (!good_spec || !bad_spec)
    throw Error(Exit::usage, "bisect needs --good REV and --bad REV",
                "e.g. abtrack bisect --good v1.2 --bad main --cell batch=64");
  util::install_interrupt_handlers();
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  if (ctx.plan.executor == plan::ExecutorKind::slurm)
    throw Error(Exit::usage,
                "bisect measures its rounds here, interleaved; a plan with executor: slurm cannot interleave them",
                "bisect with a copy of the plan without executor: slurm (abtrack -p COPY bisect ...)");

  Bisect b;
  b.seed = seed;
  b.max_rounds = max_rounds.value_or(128);
  if (budget_text) b.budget_s = util::parse_duration(*budget_text), b.budget_text = *budget_text;
  b.min_effect_pct = min_effect.value_or(ctx.plan.min_effect_pct);
  b.alpha = ctx.plan.alpha;
  b.plan = bisect_plan(ctx.plan, b.names);
  const plan::Plan& plan = b.plan;

  // The metric: --metric, else the first with better:.
  const plan::Metric* metric = nullptr;
  if (metric_name) {
    metric = plan.metric(*metric_name);
    std::vector<std::string> names;
    for (const auto& m : plan.metrics) names.push_back(m.name);
    if (!metric)
      throw Error(Exit::usage,
                  fmt::format("--metric: the plan has no metric '{}'{}", *metric_name,
                              util::suggestion_suffix(*metric_name, names)),
                  fmt::format("the plan's metrics: {}", fmt::join(names, ", ")));
    if (metric->better == plan::Better::none)
      throw Error(Exit::usage, fmt::format("--metric {}: the metric has no better:, so nothing is worse", *metric_name),
                  "add better: lower (or higher) to it in the plan");
  } else {
    for (const auto& m : plan.metrics)
      if (m.better != plan::Better::none) {
        metric = &m;
        break;
      }
    if (!metric) throw Error(Exit::usage, "bisect needs a metric with better: in the plan (or --metric NAME of one)");
  }
  b.metric = *metric;
  b.better = metric->better == plan::Better::higher ? stats::Better::higher : stats::Better::lower;

  // The cell: --cell names every axis but rev; without it, the plan must have one cell.
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
        throw Error(Exit::usage, fmt::format("the cell {} is excluded by the plan",
                                             ctx.plan.revisions.empty() ? rest : plan.label(c)));
      b.cells[k] = c;
    }
  } else {
    const auto groups = experiment::revision_groups(plan);
    if (groups.size() != 1) {
      std::vector<std::string> axes;
      for (std::size_t i = 1; i < plan.axes.size(); ++i) axes.push_back(plan.axes[i].name + "=...");
      throw Error(Exit::usage,
                  fmt::format("bisect needs --cell: the plan has {} cells{}; name one, a value for every axis{}",
                              groups.size(), ctx.plan.revisions.empty() ? "" : " for each revision",
                              ctx.plan.revisions.empty() ? "" : " but rev"),
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

  // Good and bad, as the user's commits, and the user's first-parent path between them.
  const std::vector<std::string> data = data_folders(ctx);
  auto good_found = resolve_users(ctx, *good_spec, data);
  auto bad_found = resolve_users(ctx, *bad_spec, data);
  if (!good_found || !bad_found) {
    std::string which = !good_found && !bad_found
                            ? fmt::format("--good '{}' and --bad '{}' name", *good_spec, *bad_spec)
                        : !good_found ? fmt::format("--good '{}' names", *good_spec)
                                      : fmt::format("--bad '{}' names", *bad_spec);
    throw Error(Exit::usage, which + " no commit", "give a branch, tag, commit id or HEAD~N");
  }
  const std::string good = *good_found, bad = *bad_found;
  for (const auto& [option, spec, commit] :
       {std::tuple{"--good", *good_spec, good}, std::tuple{"--bad", *bad_spec, bad}})
    if (auto plain = ctx.repo.resolve(spec); plain != commit)
      info(args.global, fmt::format("{} {} is your commit {} (abtrack's own commits are not counted)", option, spec,
                                    named(ctx.repo, commit)));
  if (good == bad)
    throw Error(Exit::usage, fmt::format("--good and --bad are the same commit of yours, {}", short_id(good)));
  auto full_path = ctx.repo.first_parent_path(good, bad);
  if (!full_path)
    throw Error(Exit::usage,
                fmt::format("--good {} ({}) is not a first-parent ancestor of --bad {} ({})", *good_spec,
                            short_id(good), *bad_spec, short_id(bad)),
                "bisect searches the first-parent history from good to bad: good must come before bad on it");

  State st;
  st.id = fmt::format("{}-{}-{}", short_id(good), short_id(bad),
                      util::sha256_hex(fmt::format("{}\n{}\n{}\n{}\nmax_rounds {}\nbudget {}\nmin_effect {}", good, bad,
                                                   plan.label(b.cells[kGood]), b.metric.name, b.max_rounds,
                                                   b.budget_s ? util::format_number(*b.budget_s) : "none",
                                                   util::format_number(b.min_effect_pct)))
                          .substr(0, 6));
  const std::string folder = folder_of(plan, st.id);
  const std::string state_file = folder + "/bisect.json";
  auto committed = ctx.repo.with_head([&](const gitstore::TreeView& t) { return t.read(state_file); });
  if (committed) {
    State before = parse_state(*committed, state_file);
    st.good_spec = before.good_spec, st.bad_spec = before.bad_spec;
    st.path = std::move(before.path), st.left_out = before.left_out, st.status = before.status,
    st.steps = std::move(before.steps);
    st.plan_sha256 = before.plan_sha256;
  } else {
    st.good_spec = *good_spec, st.bad_spec = *bad_spec;
    st.good = good, st.bad = bad;
    for (const auto& c : *full_path) {
      auto e = ctx.repo.entry(c);
      if (c != bad && e && abtrack_commit(ctx, *e, data)) ++st.left_out;
      else st.path.push_back(c);
    }
  }
  st.good = good, st.bad = bad;
  b.alpha_step = stats::bisect_step_alpha(b.alpha, st.path.size());

  stats::BisectSearch search(st.path.size());
  auto total_of = [&](int step) { return step - 1 + ceil_log2(search.hi - search.lo); };
  auto finish = [&]() {
    for (const auto& l : result_lines(ctx.repo, st, b)) fmt::print("{}\n", l);
    fmt::print("the bisect's log: {}/log\n", folder);
    std::fflush(stdout);
    return st.status == "found" ? 0 : static_cast<int>(Exit::run_failed);
  };

  // What was committed before: printed as it was, and the search replayed.
  for (const auto& s : st.steps) {
    const int total = total_of(s.number);
    if (s.number > 0) search.apply(s.index, side_of(s.like));
    fmt::print("{}\n", step_line(ctx.repo, st, s, total));
  }
  std::fflush(stdout);
  const std::string again = "give other --max-rounds, --budget or --min-effect to start a new bisect";
  if (committed && st.status != "measuring") {
    info(args.global, fmt::format("bisect {} finished before (its log: {}/log); {}", st.id, folder, again));
    return finish();
  }
  if (committed) {
    info(args.global,
         fmt::format("resuming bisect {} after its step {} (its log: {}/log)", st.id, st.steps.back().number, folder));
    if (st.plan_sha256 != plan.sha256)
      warn(fmt::format(
          "{} changed since the steps before were measured: the steps to come measure with the plan as it is now ({})",
          ctx.plan_name, again));
  } else {
    info(
        args.global,
        fmt::format(
            "bisect {}: good {} vs bad {}, {} on {}; {} commits of yours between them{}; {}; each step is committed to {}/",
            st.id, named(ctx.repo, good), named(ctx.repo, bad), b.metric.name,
            b.cell_text.empty() ? "the plan's cell" : b.cell_text, st.path.size(),
            st.left_out ? fmt::format(" ({} of abtrack's left out)", st.left_out) : "", options_text(b), folder));
  }
  if (const auto first = stats::sequential_first_look(b.alpha_step, stats::bisect_prior_g);
      static_cast<std::size_t>(b.max_rounds) < first)
    warn(fmt::format(
        "--max-rounds {}: at alpha {} a step needs {} rounds before its interval can decide; only a metric without "
        "noise can be bisected with fewer",
        b.max_rounds, util::format_number(b.alpha_step), first));

  experiment::preflight(ctx, progress);
  experiment::recover_journal(ctx, progress);  // with the user's plan: what a killed `run` left is the plan's
  // From here on the runs measure with the bisect's plan: three revisions, good, tested and bad.
  ctx.plan = b.plan;
  Budget budget(b.budget_s);

  // (run_revisions's message counts committed runs, which a bisect has none of)
  auto interrupted = [&](int step) {
    return Error(Exit::interrupted,
                 fmt::format("interrupted while measuring step {}; {}", step,
                             st.steps.empty() ? "nothing of this bisect was committed"
                                              : fmt::format("its steps up to {} are committed ({}/log)",
                                                            st.steps.back().number, folder)),
                 "run the same abtrack bisect command again to resume");
  };

  // Step 0: is bad worse than good at all? Both must build.
  if (st.steps.empty()) {
    Step s;
    s.number = 0;
    s.commit = bad;
    s.index = static_cast<std::ptrdiff_t>(st.path.size()) - 1;
    info(args.global, fmt::format("step 0: measuring bad {} against good {}", short_id(bad), short_id(good)));
    try {
      confirm(ctx, args.global, b, good, bad, budget, s);
    } catch (const Error& e) {
      if (e.code() == Exit::interrupted) throw interrupted(0);
      throw;
    }
    if (s.summary.is_null() && s.like == Like::undecided && s.line.starts_with("no round"))
      throw Error(Exit::run_failed, fmt::format("good vs bad could not be compared on {}: {}", b.metric.name, s.line));
    st.steps.push_back(s);
    if (s.like == Like::good) st.status = "not worse";
    else if (s.like != Like::bad) st.status = "unconfirmed";
    else if (!search.pick()) st.status = "found";
    commit_state(ctx, st, b, fmt::format("good {} vs bad {}", short_id(good), short_id(bad)));
    fmt::print("{}\n", step_line(ctx.repo, st, s, 0));
    std::fflush(stdout);
    if (s.like == Like::good)
      throw Error(
          Exit::run_failed,
          fmt::format(
              "bad is not worse than good on {} beyond min_effect ({}%): nothing to bisect (committed to {}/log)",
              b.metric.name, util::format_number(b.min_effect_pct), folder),
          "check --good, --bad and --metric; --min-effect sets how large a change counts");
    if (s.like != Like::bad)
      throw Error(
          Exit::run_failed, fmt::format("{} (committed to {}/log)", result_lines(ctx.repo, st, b).front(), folder),
          fmt::format("measure more (--max-rounds, now {}; --budget), or check --good and --bad; a change within "
                      "--min-effect ({}%) does not count",
                      b.max_rounds, util::format_number(b.min_effect_pct)));
  }

  // The steps: each one commit.
  while (auto pick = search.pick()) {
    Step s;
    s.number = static_cast<int>(st.steps.size());
    s.index = *pick;
    s.commit = st.path[static_cast<std::size_t>(*pick)];
    const int total = total_of(s.number);
    info(args.global,
         fmt::format("step {}/{}: measuring {} against good and bad", s.number, total, named(ctx.repo, s.commit)));
    try {
      probe(ctx, args.global, b, good, bad, budget, s);
    } catch (const Error& e) {
      if (e.code() == Exit::interrupted) throw interrupted(s.number);
      throw;
    }
    search.apply(s.index, side_of(s.like));
    st.steps.push_back(s);
    if (s.like == Like::undecided) st.status = "undecided";
    else if (!search.pick()) st.status = search.found() ? "found" : "range";
    commit_state(ctx, st, b,
                 fmt::format("{} {}", short_id(s.commit),
                             s.like == Like::skip        ? "skipped"
                             : s.like == Like::undecided ? "undecided"
                                                         : "like " + std::string(to_string(s.like))));
    fmt::print("{}\n", step_line(ctx.repo, st, s, total));
    std::fflush(stdout);
    if (s.like == Like::undecided) break;
  }
  if (st.status == "measuring") {  // finished by the steps committed before (e.g. path of one commit)
    st.status = search.found() ? "found" : "range";
  }
  return finish();
}

}  // namespace abtrack::cli
