// What a bisect knows and commits (bisect_state.hpp).
#include "experiment/bisect_state.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/text.hpp"

namespace abtrack::experiment {
namespace {

using nlohmann::json;

int ceil_log2(std::ptrdiff_t n) {
  int k = 0;
  while ((std::ptrdiff_t{1} << k) < n) ++k;
  return k;
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

}  // namespace

std::string_view to_string(Judgement l) {
  return l == Judgement::bad ? "bad" : l == Judgement::good ? "good" : l == Judgement::undecided ? "undecided" : "skip";
}
Judgement parse_judgement(const std::string& s) {
  return s == "bad"         ? Judgement::bad
         : s == "good"      ? Judgement::good
         : s == "undecided" ? Judgement::undecided
                            : Judgement::skip;
}
std::optional<stats::Side> side_of(Judgement l) {
  if (l == Judgement::skip) return std::nullopt;
  return l == Judgement::bad ? stats::Side::bad : l == Judgement::good ? stats::Side::good : stats::Side::undecided;
}

Judgement judgement_of(stats::Side side) {
  return side == stats::Side::bad ? Judgement::bad : side == stats::Side::good ? Judgement::good : Judgement::undecided;
}

Judgement judgement_of(stats::Confirmation c) {
  return c == stats::Confirmation::worse       ? Judgement::bad
         : c == stats::Confirmation::not_worse ? Judgement::good
                                               : Judgement::undecided;
}

std::string short_id(const std::string& commit) { return commit.substr(0, 7); }

std::string named(const gitstore::Repository& repo, const std::string& commit) {
  auto s = repo.subject(commit);
  return s.empty() ? short_id(commit) : short_id(commit) + " " + s;
}

std::string bisect_folder(const plan::Plan& plan, const std::string& id) { return plan.runs_dir() + "/bisect/" + id; }

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:+.1f}%", v) : v > 0 ? "+inf%" : "-inf%"; }

std::string ci_pct(const stats::Interval& ci) {
  return ci.bounded() ? fmt::format("CI [{}, {}]", pct(ci.lo), pct(ci.hi)) : std::string("CI unbounded");
}

std::string amount(std::size_t rounds, std::size_t invocations, double seconds) {
  return fmt::format("{} round{} ({} invocations, {} s)", rounds, rounds == 1 ? "" : "s", invocations,
                     util::format_number(std::round(seconds * 10) / 10));
}

stats::BisectSearch search_of(const BisectState& st) {
  stats::BisectSearch search(st.path.size());
  for (const auto& s : st.steps)
    if (s.number > 0) search.apply(s.index, side_of(s.like));
  return search;
}

std::string status_after(const stats::BisectSearch& search, Judgement last) {
  if (last == Judgement::undecided) return "undecided";
  if (search.pick()) return "measuring";
  return search.found() ? "found" : "range";
}

int expected_steps(const stats::BisectSearch& search, int step) { return step - 1 + ceil_log2(search.hi - search.lo); }

json to_json(const BisectState& st, const Bisect& b) {
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
          {"gpus", st.gpus ? json(*st.gpus) : json(nullptr)},
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
BisectState parse_state(const std::string& text, const std::string& file) {
  BisectState st;
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
    if (auto g = j.find("gpus"); g != j.end() && g->is_array()) st.gpus = g->get<std::set<std::string>>();
    for (const auto& s : j.at("steps")) {
      BisectStep step;
      step.number = s.at("step").get<int>();
      step.commit = s.at("commit").get<std::string>();
      step.index = s.at("index").get<std::ptrdiff_t>();
      step.like = parse_judgement(s.at("judgement").get<std::string>());
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
std::string step_line(const gitstore::Repository& repo, const BisectState& st, const BisectStep& s, int total) {
  if (s.number == 0) return fmt::format("good {} vs bad {}: {}", short_id(st.good), short_id(st.bad), s.line);
  return fmt::format("step {}/{}: {}: {}", s.number, total, named(repo, s.commit), s.line);
}

// The result lines of a finished bisect.
std::vector<std::string> result_lines(const gitstore::Repository& repo, const BisectState& st, const Bisect& b) {
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
    const BisectStep& last = st.steps.back();
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
std::string log_text(const gitstore::Repository& repo, const BisectState& st, const Bisect& b) {
  std::string out = fmt::format("# abtrack bisect {} of experiment {} ({})\n", st.id, b.plan.experiment,
                                bisect_folder(b.plan, st.id));
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
void commit_state(Context& ctx, Progress& progress, const BisectState& st, const Bisect& b,
                  const std::string& subject) {
  const std::string folder = bisect_folder(b.plan, st.id);
  const std::string state_file = folder + "/bisect.json";
  const std::string text = to_json(st, b).dump(1) + "\n";
  const std::string log = log_text(ctx.repo, st, b);
  const BisectStep& last = st.steps.back();
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
    progress.warn(
        fmt::format("{} in the work tree is not what the bisect committed; your version is kept (git diff {})", p, p));
}

}  // namespace abtrack::experiment
