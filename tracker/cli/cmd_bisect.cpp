// `abtrack bisect`: the first commit between a good and a bad revision that made a cell worse.
// Each tested commit is measured as the plan's candidate revision against good, interleaved
// round by round (run_revisions: the same cached trees and builds), and judged with the same
// statistics as the document's comparisons (paired by round).
//
// A bisect's measurements are not runs of the plan: they are never committed as
// runs/<experiment>/NNNN.json, so the document and `check` read after a bisect what they read
// before. Each step is one commit of the bisect's own files, runs/<experiment>/bisect/<id>/log
// (for people) and bisect.json (the state and every sample, to re-judge or resume). The id comes
// from good, bad, the cell, the metric and the rounds: the same command finds its bisect in HEAD
// and resumes it after its last committed step, or prints its result when it has finished.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/code_identity.hpp"
#include "cli/commands.hpp"
#include "cli/commit_run.hpp"
#include "cli/revision_run.hpp"
#include "record/compare.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

using nlohmann::json;

struct Bisect {
  std::string good_name, candidate_name;  // the plan's revisions that play good and the commit tested
  plan::Cell good_cell, candidate_cell;   // the bisected group's cells of those revisions
  std::string cell_text;                  // the cell without rev ("size=small"; "" when rev is the only axis)
  const plan::Metric* metric = nullptr;
  int rounds = 6;
  std::optional<std::uint64_t> seed;
};

// How a tested commit compares with good.
enum class Like { good, bad, skip };

std::string_view to_string(Like l) { return l == Like::bad ? "bad" : l == Like::good ? "good" : "skip"; }
Like parse_like(const std::string& s) { return s == "bad" ? Like::bad : s == "good" ? Like::good : Like::skip; }

// One measured (or skipped) commit. Step 0 is bad measured against good.
struct Step {
  int number = 0;
  std::ptrdiff_t index = -1;  // the commit's place on the path (step 0: the last, bad)
  std::string commit;
  Like like = Like::skip;
  std::string line;       // what was printed for it
  json summary = nullptr; // the comparison with good (null when there was none)
  json runs = json::array();
};

// A bisect as committed in runs/<experiment>/bisect/<id>/bisect.json.
struct State {
  std::string id;
  std::string good, bad, good_spec, bad_spec;
  std::vector<std::string> path;  // the commits of the user from good (excluded) to bad, oldest first
  int left_out = 0;               // abtrack's own commits left out of the path
  std::string status = "measuring";  // "found", "range", "not worse" once finished
  std::string plan_sha256;           // of the plan the committed steps were measured with
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
// (first parent); the rest is resolved by git's rules and, when it names one of abtrack's
// commits, taken down to the user's commit below it. nullopt when it names no commit.
std::optional<std::string> resolve_users(const Context& ctx, const std::string& spec, const std::vector<std::string>& data) {
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

// ---- judging ----------------------------------------------------------------------------

std::string ci_text(const stats::Comparison& c) {
  const stats::Interval& ci = c.absolute ? c.delta_abs_ci : c.delta_ci_pct;
  if (!ci.bounded()) return "CI unbounded";
  if (c.absolute) return fmt::format("CI [{}, {}]", util::format_number(ci.lo), util::format_number(ci.hi));
  return fmt::format("CI [{:+.1f}%, {:+.1f}%]", ci.lo, ci.hi);
}

// "+12.0% worse vs good, CI [+8.1%, +15.2%], p=0.031, 6 rounds". A change that is neither shown
// worse nor shown within min_effect says so ("~ (unresolved)"), however large it looks.
std::string describe(const stats::Comparison& c, int rounds) {
  std::string verdict = c.exact ? stats::verdict_text(c)  // an exact ~ is within min_effect
                        : c.verdict == stats::Verdict::same ? "~ (unresolved: neither worse nor within min_effect)"
                                                            : std::string(stats::to_string(c.verdict));
  std::string p = c.decisive_p() ? fmt::format(", p={}", util::format_number(*c.decisive_p())) : "";
  return fmt::format("{} {} vs good, {}{}, {} rounds", stats::delta_text(c), verdict, ci_text(c), p, rounds);
}

json summary_of(const stats::Comparison& c, const plan::Metric& m, int rounds) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  const stats::Interval& ci = c.absolute ? c.delta_abs_ci : c.delta_ci_pct;
  json s = {{"metric", m.name},
            {"unit", m.unit},
            {"median_good", num(c.median_a)},
            {"median_candidate", num(c.median_b)},
            {"n_good", c.n_a},
            {"n_candidate", c.n_b},
            {c.absolute ? "delta_abs" : "delta_pct", num(c.absolute ? c.delta_abs : c.delta_pct)},
            {c.absolute ? "delta_abs_ci" : "delta_pct_ci", json::array({num(ci.lo), num(ci.hi)})},
            {"verdict", std::string(stats::to_string(c.verdict))},
            {"p", c.decisive_p() ? num(*c.decisive_p()) : json(nullptr)},
            {"analysis", c.analysis},
            {"rounds", rounds}};
  if (c.analysis == "paired") s["pairs"] = c.pairs;
  return s;
}

// The raw measurement of each run, enough to judge the step again.
json runs_of(const Bisect& b, const std::vector<record::Record>& runs) {
  json out = json::array();
  for (const auto& r : runs) {
    auto rev = std::find_if(r.cell.begin(), r.cell.end(), [](const auto& kv) { return kv.first == plan::kRevAxis; });
    json j = {{"rev", rev != r.cell.end() && rev->second == b.good_name ? "good" : "candidate"},
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

// Measures `candidate` against `good` for b.rounds rounds, the revisions alternating, without
// committing a run. Appends the measurements to `runs`.
void measure(Context& ctx, const GlobalOptions& g, const Bisect& b, const std::string& good, const std::string& candidate, int batch,
             std::vector<record::Record>& runs) {
  RevisionRunOptions opts;
  opts.overrides = {{b.good_name, good}, {b.candidate_name, candidate}};
  opts.rounds = b.rounds;
  // A second batch of the same step gets its own batch id, so its rounds pair as rounds of their own.
  if (b.seed) opts.seed = *b.seed + static_cast<std::uint64_t>(batch - 1);
  opts.group = std::vector<plan::Cell>{b.good_cell, b.candidate_cell};
  opts.run.results_to_stderr = true;
  opts.run.records = &runs;
  opts.run.commit = false;
  run_revisions(ctx, g, opts);  // its exit code: a failed or invalid run, judged below from the records
}

// The candidate's runs among `runs` compared with good's, on the bisected metric; nullopt (with
// `why`) when there is nothing to compare.
std::optional<stats::Comparison> compare(const Context& ctx, const Bisect& b, const std::vector<record::Record>& runs, std::string& why) {
  record::CellRuns good{b.good_cell, {}}, candidate{b.candidate_cell, {}};
  for (const auto& r : runs) {
    if (r.data.outcome == runner::Outcome::invalid) continue;
    auto rev = std::find_if(r.cell.begin(), r.cell.end(), [](const auto& kv) { return kv.first == plan::kRevAxis; });
    if (rev == r.cell.end()) continue;
    (rev->second == b.good_name ? good : candidate).runs.push_back(&r);
  }
  if (good.runs.empty()) {
    why = "good's runs are all invalid";
    return std::nullopt;
  }
  if (candidate.runs.empty()) {
    why = "its runs are all invalid";
    return std::nullopt;
  }
  auto c = record::compare_pools(ctx.plan, good, candidate);  // paired by round
  for (auto& m : c.metrics)
    if (m.metric == b.metric->name) return m.result;
  why = c.notes.empty() ? "no comparison of " + b.metric->name : c.notes.front();
  return std::nullopt;
}

// Builds revision `name` as `overrides` resolve it (cached by its tree and the build command):
// the failed build's log (or its reason), or "" when it built.
std::string build_failure(Context& ctx, const GlobalOptions& g, const std::map<std::string, std::string>& overrides,
                          const std::string& name) {
  auto revisions = resolve_revisions(ctx, overrides);
  for (auto& r : revisions)
    if (r.name == name) {
      prepare_revision(ctx, g, r);
      if (!r.failed_build) return {};
      const std::string& reason = r.failed_build->reason;
      auto log = reason.rfind("(log: ");
      return log == std::string::npos ? reason : reason.substr(log + 1, reason.size() - log - 2);
    }
  return {};
}

// Builds `commit` first (a commit that does not build is skipped at once, good unmeasured), then
// measures it against good and judges it: worse beyond min_effect is like bad; same, equivalent or
// better like good; inconclusive twice (or nothing to compare) is skipped.
void judge(Context& ctx, const GlobalOptions& g, const Bisect& b, const std::string& good, Step& s) {
  if (auto failed = build_failure(ctx, g, {{b.good_name, good}, {b.candidate_name, s.commit}}, b.candidate_name); !failed.empty()) {
    s.like = Like::skip;
    s.line = "skipped: does not build (" + failed + ")";
    return;
  }
  std::vector<record::Record> runs;
  std::string why;
  std::optional<stats::Comparison> c;
  int rounds = 0;
  for (int batch = 1; batch <= 2; ++batch) {
    measure(ctx, g, b, good, s.commit, batch, runs);
    rounds += b.rounds;
    c = compare(ctx, b, runs, why);
    if (!c || c->verdict != stats::Verdict::inconclusive) break;
    if (batch == 1) info(g, fmt::format("{}: {}; measuring {} more rounds", short_id(s.commit), describe(*c, rounds), b.rounds));
  }
  s.runs = runs_of(b, runs);
  if (!c) {
    s.like = Like::skip;
    s.line = "skipped: " + why;
    return;
  }
  s.summary = summary_of(*c, *b.metric, rounds);
  const std::string d = describe(*c, rounds);
  switch (c->verdict) {
    case stats::Verdict::worse:
      s.like = Like::bad;
      s.line = "like bad: " + d;
      break;
    case stats::Verdict::inconclusive:
      s.like = Like::skip;
      s.line = "skipped: " + d;
      break;
    case stats::Verdict::same:  // not shown worse: counted like good, and the line says it is unresolved
      s.like = Like::good;
      s.line = (c->exact ? "like good: " : "like good (not shown worse): ") + d;
      break;
    default:
      s.like = Like::good;
      s.line = "like good: " + d;
  }
}

// ---- the search ---------------------------------------------------------------------------

int ceil_log2(std::ptrdiff_t n) {
  int k = 0;
  while ((std::ptrdiff_t{1} << k) < n) ++k;
  return k;
}

// The binary search over the path: path[lo] is like good (lo = -1: good itself), path[hi] like bad.
struct Search {
  std::ptrdiff_t lo = -1, hi = 0;
  std::set<std::ptrdiff_t> skipped;

  // The untested commit nearest the middle, if any is left.
  std::optional<std::ptrdiff_t> pick() const {
    std::optional<std::ptrdiff_t> out;
    const std::ptrdiff_t mid = lo + (hi - lo) / 2;
    for (std::ptrdiff_t i = lo + 1; i < hi; ++i)
      if (!skipped.count(i) && (!out || std::abs(i - mid) < std::abs(*out - mid))) out = i;
    return out;
  }
  void apply(const Step& s) {
    if (s.number == 0) return;
    if (s.like == Like::bad) hi = s.index;
    else if (s.like == Like::good) lo = s.index;
    else skipped.insert(s.index);
  }
};

// ---- the committed files -------------------------------------------------------------------

json to_json(const State& st, const Bisect& b, const plan::Plan& plan) {
  json steps = json::array();
  for (const auto& s : st.steps)
    steps.push_back({{"step", s.number},
                     {"commit", s.commit},
                     {"index", s.index},
                     {"judgement", std::string(to_string(s.like))},
                     {"line", s.line},
                     {"summary", s.summary},
                     {"runs", s.runs}});
  return {{"abtrack_bisect", 1},
          {"id", st.id},
          {"experiment", plan.experiment},
          {"plan_sha256", plan.sha256},
          {"good", {{"commit", st.good}, {"spec", st.good_spec}}},
          {"bad", {{"commit", st.bad}, {"spec", st.bad_spec}}},
          {"revisions", {{"good", b.good_name}, {"candidate", b.candidate_name}}},
          {"cell", b.cell_text},
          {"metric", b.metric->name},
          {"rounds", b.rounds},
          {"min_effect_pct", plan.min_effect_pct},
          {"alpha", plan.alpha},
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
      if (step.number != static_cast<int>(st.steps.size()) || step.index < 0 || step.index >= static_cast<std::ptrdiff_t>(st.path.size()) ||
          st.path[static_cast<std::size_t>(step.index)] != step.commit)
        throw Error(Exit::environment, fmt::format("step {} does not fit the path", step.number));
      st.steps.push_back(std::move(step));
    }
  } catch (const json::exception& e) {
    throw Error(Exit::environment, fmt::format("{} is not a bisect abtrack can read: {}", file, e.what()),
                "give other --rounds to start a new bisect, or remove the folder (git rm -r) and run again");
  }
  return st;
}

// The printed line of a step ("step 2/3: 1a2b3c4 subject: like bad: ...").
std::string step_line(const gitstore::Repository& repo, const State& st, const Step& s, int total) {
  if (s.number == 0) return fmt::format("good {} vs bad {}: {}", short_id(st.good), short_id(st.bad), s.line);
  return fmt::format("step {}/{}: {}: {}", s.number, total, named(repo, s.commit), s.line);
}

// The result lines of a finished bisect.
std::vector<std::string> result_lines(const gitstore::Repository& repo, const State& st, const Bisect& b, const plan::Plan& plan) {
  if (st.status == "not worse")
    return {fmt::format("bad is not worse than good on {} beyond min_effect ({}%): nothing to bisect", b.metric->name,
                        util::format_number(plan.min_effect_pct))};
  Search search;
  search.hi = static_cast<std::ptrdiff_t>(st.path.size()) - 1;
  for (const auto& s : st.steps) search.apply(s);
  if (search.hi - search.lo == 1) {
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

// The log for people, like `git bisect log`: what was bisected, each step with its measurement
// and judgement, and the result.
std::string log_text(const gitstore::Repository& repo, const State& st, const Bisect& b, const plan::Plan& plan) {
  std::string out = fmt::format("# abtrack bisect {} of experiment {} ({})\n", st.id, plan.experiment, folder_of(plan, st.id));
  out += fmt::format("# good: {} {} (--good {})\n", st.good, repo.subject(st.good), st.good_spec);
  out += fmt::format("# bad:  {} {} (--bad {})\n", st.bad, repo.subject(st.bad), st.bad_spec);
  out += fmt::format("# metric {} (better {}), cell {}, {} rounds a measurement, min_effect {}%\n", b.metric->name,
                     b.metric->better == plan::Better::higher ? "higher" : "lower", b.cell_text.empty() ? "(rev only)" : b.cell_text,
                     b.rounds, util::format_number(plan.min_effect_pct));
  out += fmt::format("# revision {} plays good, revision {} the commit tested\n", b.good_name, b.candidate_name);
  out += fmt::format("# {} commit{} of yours from good to bad{}\n", st.path.size(), st.path.size() == 1 ? "" : "s",
                     st.left_out ? fmt::format(" ({} commit{} of abtrack's left out)", st.left_out, st.left_out == 1 ? "" : "s") : "");
  for (const auto& s : st.steps) {
    out += "\n";
    out += s.number == 0 ? fmt::format("step 0 good vs bad {}\n", named(repo, s.commit))
                         : fmt::format("step {} {}\n", s.number, named(repo, s.commit));
    if (s.summary.is_object()) {
      const json& m = s.summary;
      auto num = [](const json& v) { return v.is_number() ? util::format_number(v.get<double>()) : std::string("-"); };
      const std::string unit = m.value("unit", "").empty() ? "" : " " + m.value("unit", "");
      out += fmt::format("  median good {}{}, {} {}{}\n", num(m["median_good"]), unit, s.number == 0 ? "bad" : "tested",
                         num(m["median_candidate"]), unit);
    }
    out += "  " + s.line + "\n";
    out += fmt::format("  judged: {}\n", s.like == Like::bad ? "bad" : s.like == Like::good ? "good" : "skip");
  }
  out += "\n";
  if (st.status == "measuring") {
    out += "# unfinished: the same abtrack bisect command resumes it\n";
  } else {
    for (const auto& l : result_lines(repo, st, b, plan)) out += l + "\n";
  }
  return out;
}

// Commits the state and its log as the next step of the bisect: one commit, on HEAD's branch.
void commit_state(Context& ctx, const State& st, const Bisect& b, const std::string& subject) {
  const std::string folder = folder_of(ctx.plan, st.id);
  const std::string state_file = folder + "/bisect.json";
  const std::string text = to_json(st, b, ctx.plan).dump(1) + "\n";
  const std::string log = log_text(ctx.repo, st, b, ctx.plan);
  const Step& last = st.steps.back();
  auto result = ctx.repo.commit([&](const gitstore::TreeView& tip) {
    // Another abtrack bisect with the same arguments may have committed meanwhile.
    std::size_t before = 0;
    if (auto have = tip.read(state_file)) before = parse_state(*have, state_file).steps.size();
    if (before != st.steps.size() - 1)
      throw Error(Exit::environment,
                  fmt::format("{} changed while step {} was measured (another abtrack bisect with the same arguments?)", state_file,
                              last.number),
                  "run the bisect again: it resumes from the last step committed");
    gitstore::Change change;
    change.message = fmt::format("abtrack({}): bisect {} step {}: {}\n\n{}\n\nAbtrack-Experiment: {}\nAbtrack-Bisect: {}\nAbtrack-Bisect-Step: {}\n",
                                 ctx.plan.experiment, st.id, last.number, subject, last.line, ctx.plan.experiment, st.id, last.number);
    change.files.emplace_back(folder + "/log", log);
    change.files.emplace_back(state_file, text);
    return change;
  });
  for (const auto& p : result.kept_edits)
    warn(fmt::format("{} in the work tree is not what the bisect committed; your version is kept (git diff {})", p, p));
}

std::string cell_without_rev(const plan::Plan& plan, const plan::Cell& cell) {
  std::vector<std::string> parts;
  for (std::size_t i = 1; i < plan.axes.size() && i < cell.values.size(); ++i) parts.push_back(plan.axes[i].name + "=" + cell.values[i]);
  return fmt::format("{}", fmt::join(parts, ","));
}

}  // namespace

int cmd_bisect(const Args& args) {
  std::optional<std::string> good_spec, bad_spec, cell_spec, metric_name;
  std::optional<int> rounds;
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
    } else if (auto v4 = take_value(args.rest, i, "--rounds")) {
      auto n = util::parse_double(*v4);
      if (!n || *n < 1 || *n > 10000 || std::floor(*n) != *n)
        throw Error(Exit::usage, fmt::format("--rounds must be a whole number from 1 to 10000, not '{}'", *v4));
      rounds = static_cast<int>(*n);
    } else if (auto v5 = take_value(args.rest, i, "--seed")) {
      auto n = util::parse_double(*v5);
      if (!n || *n < 0 || std::floor(*n) != *n || *n > 9e15) throw Error(Exit::usage, fmt::format("--seed must be a whole number, not '{}'", *v5));
      seed = static_cast<std::uint64_t>(*n);
    } else {
      unknown_argument("bisect", args.rest[i], {"--good", "--bad", "--cell", "--metric", "--rounds", "--seed"});
    }
  }
  if (!good_spec || !bad_spec)
    throw Error(Exit::usage, "bisect needs --good REV and --bad REV", "e.g. abtrack bisect --good v1.2 --bad main --cell batch=64");
  util::install_interrupt_handlers();
  Context ctx = open_context(args.global);
  const plan::Plan& plan = ctx.plan;
  if (plan.revisions.size() < 2)
    throw Error(Exit::usage, "bisect measures commits as the plan's revisions; the plan needs revisions: with two names",
                "add revisions: {base: main, mine: main} and baseline: {rev: base} (docs/plan.md)");

  Bisect b;
  b.seed = seed;
  b.rounds = rounds ? *rounds : plan.rounds > 0 ? plan.rounds : 6;
  b.good_name = plan.revisions.front().first;
  if (plan.baseline)
    for (const auto& [axis, value] : *plan.baseline)
      if (axis == plan::kRevAxis) b.good_name = value;
  for (const auto& [name, _] : plan.revisions)
    if (name != b.good_name) {
      b.candidate_name = name;
      break;
    }

  // The metric: --metric, else the first with better:.
  if (metric_name) {
    b.metric = plan.metric(*metric_name);
    std::vector<std::string> names;
    for (const auto& m : plan.metrics) names.push_back(m.name);
    if (!b.metric)
      throw Error(Exit::usage, fmt::format("--metric: the plan has no metric '{}'{}", *metric_name, util::suggestion_suffix(*metric_name, names)),
                  fmt::format("the plan's metrics: {}", fmt::join(names, ", ")));
    if (b.metric->better == plan::Better::none)
      throw Error(Exit::usage, fmt::format("--metric {}: the metric has no better:, so nothing is worse", *metric_name),
                  "add better: lower (or higher) to it in the plan");
  } else {
    for (const auto& m : plan.metrics)
      if (m.better != plan::Better::none) {
        b.metric = &m;
        break;
      }
    if (!b.metric) throw Error(Exit::usage, "bisect needs a metric with better: in the plan (or --metric NAME of one)");
  }

  // The cell: --cell names every axis but rev; without it, the plan must have one cell per revision.
  std::string rest = cell_spec.value_or("");
  for (const auto& part : util::split(rest, ','))
    if (util::trim(part.substr(0, part.find('='))) == plan::kRevAxis)
      throw Error(Exit::usage, "--cell names the cell without rev: bisect sets rev itself (good and the commit tested)",
                  fmt::format("drop rev= from --cell '{}'", rest));
  const auto cells = plan.cells();
  if (cell_spec) {
    auto cell_of = [&](const std::string& rev) {
      auto c = plan.parse_cell(fmt::format("{}={}{}{}", plan::kRevAxis, rev, rest.empty() ? "" : ",", rest));
      if (std::find(cells.begin(), cells.end(), c) == cells.end())
        throw Error(Exit::usage, fmt::format("the cell {} is excluded by the plan", plan.label(c)));
      return c;
    };
    b.good_cell = cell_of(b.good_name);
    b.candidate_cell = cell_of(b.candidate_name);
  } else {
    const auto groups = revision_groups(plan);
    if (groups.size() != 1) {
      std::vector<std::string> axes;
      for (std::size_t i = 1; i < plan.axes.size(); ++i) axes.push_back(plan.axes[i].name + "=...");
      throw Error(Exit::usage,
                  fmt::format("bisect needs --cell: the plan has {} cells for each revision; name one, a value for every axis but rev",
                              groups.size()),
                  fmt::format("e.g. --cell {}", groups.empty() ? fmt::format("{}", fmt::join(axes, ",")) : cell_without_rev(plan, groups.front().front())));
    }
    auto find = [&](const std::string& rev) {
      for (const auto& c : groups.front())
        if (c.values.front() == rev) return c;
      throw Error(Exit::usage, fmt::format("the plan's cell for revision {} is excluded by the plan", rev));
    };
    b.good_cell = find(b.good_name);
    b.candidate_cell = find(b.candidate_name);
  }
  b.cell_text = cell_without_rev(plan, b.good_cell);

  // Good and bad, as the user's commits, and the user's first-parent path between them.
  const std::vector<std::string> data = data_folders(ctx);
  auto good_found = resolve_users(ctx, *good_spec, data);
  auto bad_found = resolve_users(ctx, *bad_spec, data);
  if (!good_found || !bad_found) {
    std::string which = !good_found && !bad_found ? fmt::format("--good '{}' and --bad '{}' name", *good_spec, *bad_spec)
                        : !good_found             ? fmt::format("--good '{}' names", *good_spec)
                                                  : fmt::format("--bad '{}' names", *bad_spec);
    throw Error(Exit::usage, which + " no commit", "give a branch, tag, commit id or HEAD~N");
  }
  const std::string good = *good_found, bad = *bad_found;
  for (const auto& [option, spec, commit] : {std::tuple{"--good", *good_spec, good}, std::tuple{"--bad", *bad_spec, bad}})
    if (auto plain = ctx.repo.resolve(spec); plain != commit)
      info(args.global, fmt::format("{} {} is your commit {} (abtrack's own commits are not counted)", option, spec, named(ctx.repo, commit)));
  if (good == bad) throw Error(Exit::usage, fmt::format("--good and --bad are the same commit of yours, {}", short_id(good)));
  auto full_path = ctx.repo.first_parent_path(good, bad);
  if (!full_path)
    throw Error(Exit::usage, fmt::format("--good {} ({}) is not a first-parent ancestor of --bad {} ({})", *good_spec, short_id(good), *bad_spec, short_id(bad)),
                "bisect searches the first-parent history from good to bad: good must come before bad on it");

  State st;
  st.id = fmt::format("{}-{}-{}", short_id(good), short_id(bad),
                      util::sha256_hex(fmt::format("{}\n{}\n{}\n{}\n{}", good, bad, plan.label(b.good_cell), b.metric->name, b.rounds)).substr(0, 6));
  const std::string folder = folder_of(plan, st.id);
  const std::string state_file = folder + "/bisect.json";
  auto committed = ctx.repo.with_head([&](const gitstore::TreeView& t) { return t.read(state_file); });
  if (committed) {
    State before = parse_state(*committed, state_file);
    st.good_spec = before.good_spec, st.bad_spec = before.bad_spec;
    st.path = std::move(before.path), st.left_out = before.left_out, st.status = before.status, st.steps = std::move(before.steps);
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

  Search search;
  search.hi = static_cast<std::ptrdiff_t>(st.path.size()) - 1;
  auto total_of = [&](int step) { return step - 1 + ceil_log2(search.hi - search.lo); };
  auto finish = [&]() {
    for (const auto& l : result_lines(ctx.repo, st, b, plan)) fmt::print("{}\n", l);
    fmt::print("the bisect's log: {}/log\n", folder);
    std::fflush(stdout);
    return st.status == "found" ? 0 : static_cast<int>(Exit::run_failed);
  };

  // What was committed before: printed as it was, and the search replayed.
  for (const auto& s : st.steps) {
    const int total = total_of(s.number);
    search.apply(s);
    fmt::print("{}\n", step_line(ctx.repo, st, s, total));
  }
  std::fflush(stdout);
  if (committed && st.status != "measuring") {
    info(args.global, fmt::format("bisect {} finished before (its log: {}/log); give other --rounds to measure again", st.id, folder));
    return finish();
  }
  if (committed) {
    info(args.global, fmt::format("resuming bisect {} after its step {} (its log: {}/log)", st.id, st.steps.back().number, folder));
    if (st.plan_sha256 != plan.sha256)
      warn(fmt::format("{} changed since the steps before were measured: the steps to come measure with the plan as it is now "
                       "(give other --rounds to start a new bisect)",
                       ctx.plan_name));
  }
  else
    info(args.global, fmt::format("bisect {}: good {} vs bad {}, {} on {}, {} rounds; {} commits of yours between them{}; each step is "
                                  "committed to {}/",
                                  st.id, named(ctx.repo, good), named(ctx.repo, bad), b.metric->name,
                                  b.cell_text.empty() ? "the plan's cell" : b.cell_text, b.rounds, st.path.size(),
                                  st.left_out ? fmt::format(" ({} of abtrack's left out)", st.left_out) : "", folder));

  preflight(ctx);
  recover_journal(ctx);

  // (run_revisions's message counts committed runs, which a bisect has none of)
  auto interrupted = [&](int step) {
    return Error(Exit::interrupted,
                 fmt::format("interrupted while measuring step {}; {}", step,
                             st.steps.empty() ? "nothing of this bisect was committed"
                                              : fmt::format("its steps up to {} are committed ({}/log)", st.steps.back().number, folder)),
                 "run the same abtrack bisect command again to resume");
  };

  // Step 0: is bad worse than good at all? Both must build.
  if (st.steps.empty()) {
    Step s;
    s.number = 0;
    s.commit = bad;
    s.index = static_cast<std::ptrdiff_t>(st.path.size()) - 1;
    std::optional<stats::Comparison> c;
    try {
      const std::map<std::string, std::string> both{{b.good_name, good}, {b.candidate_name, bad}};
      for (const auto& [name, which, commit] : {std::tuple{b.good_name, "good", good}, std::tuple{b.candidate_name, "bad", bad}})
        if (auto failed = build_failure(ctx, args.global, both, name); !failed.empty())
          throw Error(Exit::run_failed, fmt::format("{} {} does not build: {}", which, short_id(commit), failed),
                      "bisect needs good and bad to build");
      std::vector<record::Record> runs;
      measure(ctx, args.global, b, good, bad, 1, runs);
      std::string why;
      c = compare(ctx, b, runs, why);
      if (!c) throw Error(Exit::run_failed, fmt::format("good vs bad could not be compared on {}: {}", b.metric->name, why));
      s.runs = runs_of(b, runs);
    } catch (const Error& e) {
      if (e.code() == Exit::interrupted) throw interrupted(0);
      throw;
    }
    s.summary = summary_of(*c, *b.metric, b.rounds);
    s.like = c->verdict == stats::Verdict::worse ? Like::bad : Like::skip;
    s.line = describe(*c, b.rounds);
    st.steps.push_back(s);
    if (s.like != Like::bad) st.status = "not worse";
    else if (!search.pick()) st.status = "found";
    commit_state(ctx, st, b, fmt::format("good {} vs bad {}", short_id(good), short_id(bad)));
    fmt::print("{}\n", step_line(ctx.repo, st, s, 0));
    std::fflush(stdout);
    if (s.like != Like::bad)
      throw Error(Exit::run_failed,
                  fmt::format("bad is not worse than good on {} (Δ {}, verdict {}): nothing to bisect (committed to {}/log)", b.metric->name,
                              stats::delta_text(*c), stats::verdict_text(*c), folder),
                  c->verdict == stats::Verdict::inconclusive || c->verdict == stats::Verdict::same
                      ? fmt::format("measure more rounds (--rounds; now {}), or check --good and --bad", b.rounds)
                      : fmt::format("bad is within min_effect ({}%) of good or better: check --good, --bad and --metric",
                                    util::format_number(plan.min_effect_pct)));
  }

  // The steps: each one commit.
  while (auto pick = search.pick()) {
    Step s;
    s.number = static_cast<int>(st.steps.size());
    s.index = *pick;
    s.commit = st.path[static_cast<std::size_t>(*pick)];
    const int total = total_of(s.number);
    info(args.global, fmt::format("step {}/{}: measuring {} against good", s.number, total, named(ctx.repo, s.commit)));
    try {
      judge(ctx, args.global, b, good, s);
    } catch (const Error& e) {
      if (e.code() == Exit::interrupted) throw interrupted(s.number);
      throw;
    }
    search.apply(s);
    st.steps.push_back(s);
    if (!search.pick()) st.status = search.hi - search.lo == 1 ? "found" : "range";
    commit_state(ctx, st, b, fmt::format("{} {}", short_id(s.commit), s.like == Like::bad ? "like bad" : s.like == Like::good ? "like good" : "skipped"));
    fmt::print("{}\n", step_line(ctx.repo, st, s, total));
    std::fflush(stdout);
  }
  if (st.status == "measuring") {  // finished by the steps committed before (e.g. path of one commit)
    st.status = search.hi - search.lo == 1 ? "found" : "range";
  }
  return finish();
}

}  // namespace abtrack::cli
