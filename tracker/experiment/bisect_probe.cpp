// One step of a bisect measured until it is decided (bisect_probe.hpp).
#include "experiment/bisect_probe.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiment/revision_run.hpp"
#include "experiment/revisions.hpp"
#include "stats/bisect.hpp"
#include "stats/paired.hpp"
#include "util/text.hpp"

namespace abtrack::experiment {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

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
std::vector<std::vector<std::vector<double>>> measure(Context& ctx, Progress& progress, const Bisect& b,
                                                      const std::array<std::string, 3>& commits,
                                                      const std::vector<std::size_t>& arms, std::size_t n,
                                                      std::uint64_t seed_offset, Budget& budget, Measured& m) {
  RevisionRunOptions opts;
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
  const auto start = Clock::now();
  run_revisions(ctx, progress, opts);  // its exit code: a failed or invalid run, judged below from the records
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

std::string_view stop_text(stats::StopReason s) {
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

// Builds revision `name` as `overrides` resolve it (cached by its tree and the build command):
// the failed build's log (or its reason), or "" when it built.
std::string build_failure(Context& ctx, Progress& progress, const std::map<std::string, std::string>& overrides,
                          const std::string& name) {
  auto revisions = resolve_revisions(ctx, progress, overrides);
  for (auto& r : revisions)
    if (r.name == name) {
      prepare_revision(ctx, progress, r);
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

}  // namespace

void confirm(Context& ctx, Progress& progress, Progress& runs, const Bisect& b, const std::string& good,
             const std::string& bad, Budget& budget, BisectStep& s) {
  const std::array<std::string, 3> commits{good, bad, bad};
  for (std::size_t k : {kGood, kBad})
    if (auto failed = build_failure(ctx, progress, overrides_of(b, commits), b.names[k]); !failed.empty())
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
          for (auto& r : measure(ctx, runs, b, commits, {kGood, kBad}, n, batch, budget, m))
            rounds.push_back({std::move(r[0]), std::move(r[1])});
          complete = rounds.size();
          if (b.batch_lines && !rounds.empty()) {
            const auto c = stats::compare_paired(rounds, o);
            progress.info(
                fmt::format("good vs bad: {} after {}", describe(c), amount(rounds.size(), m.invocations, m.seconds)));
          }
          return true;
        },
        o, static_cast<std::size_t>(b.max_rounds));
  });
  s.runs = runs_of(b, m.runs);
  if (result.stop == stats::StopReason::no_rounds || result.batches == 0) {
    s.like = Judgement::undecided;
    s.line = result.batches == 0
                 ? fmt::format("not measured: the budget ({}) was spent", b.budget_text)
                 : fmt::format("no round measured both: {}", m.invalid.empty() ? "no valid run" : m.invalid);
    return;
  }
  const stats::Comparison& c = result.estimate;
  const auto conclusion = stats::confirm_regression(c);
  s.like = judgement_of(conclusion);
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
               {"stop", std::string(stop_text(result.stop))}};
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

void probe(Context& ctx, Progress& progress, Progress& runs, const Bisect& b, const std::string& good,
           const std::string& bad, Budget& budget, BisectStep& s) {
  const std::array<std::string, 3> commits{good, s.commit, bad};
  if (auto failed = build_failure(ctx, progress, overrides_of(b, commits), b.names[kTested]); !failed.empty()) {
    s.like = Judgement::skip;
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
          for (auto& r : measure(ctx, runs, b, commits, arms, n, static_cast<std::uint64_t>(s.number) * 1000 + batch,
                                 budget, m)) {
            stats::ProbeRound p;
            for (std::size_t i = 0; i < 3; ++i)
              (arms[i] == kGood ? p.good : arms[i] == kTested ? p.tested : p.bad) = std::move(r[i]);
            rounds.push_back(std::move(p));
          }
          if (b.batch_lines && !rounds.empty()) {
            const auto e = stats::classify_probe(rounds, b.better, b.alpha_step);
            progress.info(fmt::format(
                "{}: {} after {}: {}", short_id(s.commit), describe(e), amount(rounds.size(), m.invocations, m.seconds),
                e.side == stats::Side::undecided ? "measuring on" : "like " + std::string(stats::to_string(e.side))));
          }
          return true;
        },
        b.better, b.alpha_step, static_cast<std::size_t>(b.max_rounds));
  });
  s.runs = runs_of(b, m.runs);
  if (result.stop == stats::StopReason::no_rounds) {
    s.like = Judgement::skip;
    s.line =
        "skipped: no round measured all three (" + (m.invalid.empty() ? std::string("no valid run") : m.invalid) + ")";
    return;
  }
  const stats::ProbeEstimate& e = result.estimate;
  s.like = judgement_of(e.side);
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
               {"stop", std::string(stop_text(result.stop))}};
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

}  // namespace abtrack::experiment
