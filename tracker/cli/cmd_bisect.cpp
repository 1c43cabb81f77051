// `abtrack bisect`: the first commit between a good and a bad revision that made a cell worse.
// Each tested commit is measured as the plan's candidate revision against good, interleaved
// round by round (run_revisions: the same cached trees and builds, one commit per run), and
// judged with the same statistics as the document's comparisons (paired by round).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/commit_run.hpp"
#include "cli/revision_run.hpp"
#include "record/compare.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

struct Bisect {
  std::string good_name, candidate_name;  // the plan's revisions that play good and the commit tested
  plan::Cell good_cell, candidate_cell;   // the --cell group's cells of those revisions
  const plan::Metric* metric = nullptr;
  int rounds = 6;
  std::optional<std::uint64_t> seed;
};

// How a tested commit compares with good.
enum class Like { good, bad, skip };

struct Judgement {
  Like like = Like::skip;
  std::string detail;  // "+12.0% worse vs good", or why it was skipped
};

std::string short_id(const std::string& commit) { return commit.substr(0, 7); }

std::string named(const gitstore::Repository& repo, const std::string& commit) {
  auto s = repo.subject(commit);
  return s.empty() ? short_id(commit) : short_id(commit) + " " + s;
}

// Measures `candidate` against `good` for b.rounds rounds, the revisions alternating; every run
// is committed. Appends the committed records to `runs`.
void measure(Context& ctx, const GlobalOptions& g, const Bisect& b, const std::string& good, const std::string& candidate,
             std::vector<record::Record>& runs) {
  RevisionRunOptions opts;
  opts.overrides = {{b.good_name, good}, {b.candidate_name, candidate}};
  opts.rounds = b.rounds;
  opts.seed = b.seed;
  opts.group = std::vector<plan::Cell>{b.good_cell, b.candidate_cell};
  opts.run.results_to_stderr = true;
  opts.run.records = &runs;
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
    why = "its runs are all invalid (a failed build?)";
    return std::nullopt;
  }
  auto c = record::compare_pools(ctx.plan, good, candidate);  // paired by round
  for (auto& m : c.metrics)
    if (m.metric == b.metric->name) return m.result;
  why = c.notes.empty() ? "no comparison of " + b.metric->name : c.notes.front();
  return std::nullopt;
}

std::string describe(const stats::Comparison& c) {
  std::string p = c.decisive_p() ? fmt::format(", p={}", util::format_number(*c.decisive_p())) : "";
  return fmt::format("{} {} vs good{}", stats::delta_text(c), c.verdict == stats::Verdict::same ? "same" : std::string(stats::to_string(c.verdict)), p);
}

// Measures `commit` against good and judges it: worse beyond min_effect is like bad; same,
// equivalent or better like good; inconclusive twice (or nothing to compare) is skipped.
Judgement judge(Context& ctx, const GlobalOptions& g, const Bisect& b, const std::string& good, const std::string& commit) {
  std::vector<record::Record> runs;
  std::string why;
  std::optional<stats::Comparison> c;
  for (int batch = 1; batch <= 2; ++batch) {
    measure(ctx, g, b, good, commit, runs);
    c = compare(ctx, b, runs, why);
    if (!c) return {Like::skip, "skipped: " + why};
    if (c->verdict != stats::Verdict::inconclusive) break;
    if (batch == 1) info(g, fmt::format("{}: inconclusive ({}); measuring {} more rounds", short_id(commit), describe(*c), b.rounds));
  }
  switch (c->verdict) {
    case stats::Verdict::worse: return {Like::bad, describe(*c)};
    case stats::Verdict::inconclusive:
      return {Like::skip, fmt::format("skipped: inconclusive after {} rounds ({})", 2 * b.rounds, describe(*c))};
    default: return {Like::good, describe(*c)};
  }
}

int ceil_log2(std::ptrdiff_t n) {
  int k = 0;
  while ((std::ptrdiff_t{1} << k) < n) ++k;
  return k;
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

  // The cell: --cell names every axis but rev.
  std::string rest = cell_spec.value_or("");
  for (const auto& part : util::split(rest, ','))
    if (util::trim(part.substr(0, part.find('='))) == plan::kRevAxis)
      throw Error(Exit::usage, "--cell names the cell without rev: bisect sets rev itself (good and the commit tested)",
                  fmt::format("drop rev= from --cell '{}'", rest));
  if (!cell_spec && plan.axes.size() > 1) {
    std::vector<std::string> axes;
    for (std::size_t i = 1; i < plan.axes.size(); ++i) axes.push_back(plan.axes[i].name + "=...");
    throw Error(Exit::usage, "bisect needs --cell: the cell to bisect, a value for every axis but rev",
                fmt::format("e.g. --cell {}", fmt::join(axes, ",")));
  }
  auto cell_of = [&](const std::string& rev) {
    auto c = plan.parse_cell(fmt::format("{}={}{}{}", plan::kRevAxis, rev, rest.empty() ? "" : ",", rest));
    const auto cells = plan.cells();
    if (std::find(cells.begin(), cells.end(), c) == cells.end())
      throw Error(Exit::usage, fmt::format("the cell {} is excluded by the plan", plan.label(c)));
    return c;
  };
  b.good_cell = cell_of(b.good_name);
  b.candidate_cell = cell_of(b.candidate_name);

  // Good and bad, and the first-parent path between them.
  auto good = ctx.repo.resolve(*good_spec);
  auto bad = ctx.repo.resolve(*bad_spec);
  if (!good || !bad) {
    std::string which = !good && !bad ? fmt::format("--good '{}' and --bad '{}' name", *good_spec, *bad_spec)
                        : !good        ? fmt::format("--good '{}' names", *good_spec)
                                       : fmt::format("--bad '{}' names", *bad_spec);
    throw Error(Exit::usage, which + " no commit", "give a branch, tag, commit id or HEAD~N");
  }
  if (*good == *bad) throw Error(Exit::usage, fmt::format("--good and --bad are the same commit {}", short_id(*good)));
  auto path = ctx.repo.first_parent_path(*good, *bad);
  if (!path)
    throw Error(Exit::usage, fmt::format("--good {} ({}) is not a first-parent ancestor of --bad {} ({})", *good_spec, short_id(*good), *bad_spec, short_id(*bad)),
                "bisect searches the first-parent history from good to bad: good must come before bad on it");

  preflight(ctx);
  recover_journal(ctx);

  // Is bad worse than good at all?
  info(args.global, fmt::format("good {} vs bad {}, {} on {}, {} rounds", named(ctx.repo, *good), named(ctx.repo, *bad), b.metric->name,
                                rest.empty() ? "the plan's cell" : rest, b.rounds));
  {
    std::vector<record::Record> runs;
    measure(ctx, args.global, b, *good, *bad, runs);
    std::string why;
    auto c = compare(ctx, b, runs, why);
    if (!c) throw Error(Exit::run_failed, fmt::format("good vs bad could not be compared on {}: {}", b.metric->name, why));
    fmt::print("good {} vs bad {}: {}\n", short_id(*good), short_id(*bad), describe(*c));
    std::fflush(stdout);
    if (c->verdict != stats::Verdict::worse)
      throw Error(Exit::run_failed,
                  fmt::format("bad is not worse than good on {} (Δ {}, verdict {}): nothing to bisect", b.metric->name, stats::delta_text(*c),
                              stats::verdict_text(*c)),
                  c->verdict == stats::Verdict::inconclusive || c->verdict == stats::Verdict::same
                      ? fmt::format("measure more rounds (--rounds; now {}), or check --good and --bad", b.rounds)
                      : fmt::format("bad is within min_effect ({}%) of good or better: check --good, --bad and --metric",
                                    util::format_number(plan.min_effect_pct)));
  }

  // Binary search over the path: path[lo] is like good (lo = -1: good itself), path[hi] like bad.
  const auto& commits = *path;
  std::ptrdiff_t lo = -1, hi = static_cast<std::ptrdiff_t>(commits.size()) - 1;
  std::set<std::ptrdiff_t> skipped;
  for (int step = 1;; ++step) {
    std::optional<std::ptrdiff_t> pick;
    const std::ptrdiff_t mid = lo + (hi - lo) / 2;
    for (std::ptrdiff_t i = lo + 1; i < hi; ++i)  // the untested commit nearest the middle
      if (!skipped.count(i) && (!pick || std::abs(i - mid) < std::abs(*pick - mid))) pick = i;
    if (!pick) break;
    const int total = step - 1 + ceil_log2(hi - lo);
    const std::string& commit = commits[static_cast<std::size_t>(*pick)];
    info(args.global, fmt::format("step {}/{}: measuring {} against good", step, total, named(ctx.repo, commit)));
    auto j = judge(ctx, args.global, b, *good, commit);
    const char* like = j.like == Like::bad ? "like bad" : j.like == Like::good ? "like good" : "skipped";
    if (j.like == Like::skip)
      fmt::print("step {}/{}: {}: {}\n", step, total, named(ctx.repo, commit), j.detail);
    else
      fmt::print("step {}/{}: {}: {} ({})\n", step, total, named(ctx.repo, commit), like, j.detail);
    std::fflush(stdout);
    if (j.like == Like::bad) hi = *pick;
    else if (j.like == Like::good) lo = *pick;
    else skipped.insert(*pick);
  }
  if (hi - lo == 1) {
    fmt::print("first bad commit: {} {}\n", commits[static_cast<std::size_t>(hi)], ctx.repo.subject(commits[static_cast<std::size_t>(hi)]));
    return 0;
  }
  fmt::print("first bad commit: one of these (skipped commits leave it ambiguous):\n");
  for (std::ptrdiff_t i = lo + 1; i <= hi; ++i)
    fmt::print("  {} {}\n", commits[static_cast<std::size_t>(i)], ctx.repo.subject(commits[static_cast<std::size_t>(i)]));
  return static_cast<int>(Exit::run_failed);
}

}  // namespace abtrack::cli
