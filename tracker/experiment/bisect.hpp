#pragma once
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
//
// The engine is in three parts: this file's bisect() (the setup: the bisect's plan, cell, metric,
// good and bad, and the search, step after step), bisect_probe.hpp (one step measured until it is
// decided) and bisect_state.hpp (the state, and the files each step commits).
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "experiment/context.hpp"
#include "experiment/progress.hpp"
#include "plan/plan.hpp"

namespace abtrack::experiment {

// What the user asked of a bisect.
struct BisectOptions {
  std::string good_spec, bad_spec;       // --good, --bad: revisions as git reads them, counted in the user's commits
  std::optional<std::string> cell;       // --cell: a value for every axis but rev; without it the plan has one cell
  std::optional<std::string> metric;     // --metric; without it the first metric with better:
  int max_rounds = 128;                  // the most rounds a step measures
  std::optional<std::string> budget;     // the wall time the bisect may take, a duration as given ("30m")
  std::optional<double> min_effect_pct;  // how much worse bad must be; the plan's min_effect without it
  std::optional<std::uint64_t> seed;     // the rounds' seed (run_revisions's, offset by step and batch)
  bool batch_lines = true;               // a line of info after each batch of rounds (the CLI: unless -q)
};

// Bisects `ctx`'s plan as `options` ask: each step measured and committed, told to `progress`
// (info as it goes, each step's line and the result printed), the runs themselves measured with
// `runs` as their progress (the bisect says what they measured itself: the CLI gives a quiet one).
// Resumes a bisect with the same options committed before, or prints its result when it has
// finished. Returns the exit code: 0 when the first bad commit is found, Exit::run_failed when it
// is left a range or undecided. Throws Error(usage) for options or a plan it cannot bisect with,
// Error(run_failed) when good or bad does not build or bad is not shown worse than good, and the
// interruption (Exit::interrupted) with what was committed.
int bisect(Context& ctx, Progress& progress, Progress& runs, const BisectOptions& options);

// The plan a bisect measures with: `user`'s, its `rev` axis made of three revisions, good (the
// baseline revision), bad (the plan's revision called bad, else new) and tested (the first other,
// else new), or, for a plan without `revisions:`, a new `rev` axis of good, tested and bad in
// front of its axes, with its `build:` back from the setup it ran as (plan/load.cpp) to a build
// per code tree. Sets `names` (good, tested, bad). Throws Error(usage) for a plan without
// `revisions:` that has an axis called rev.
plan::Plan bisect_plan(const plan::Plan& user, std::array<std::string, 3>& names);

// A revision split into what git resolves and the first-parent steps back of its trailing chain
// of `~N` and `^` (`^1`): "main~2^" is {"main", 3}. A chain alone ("~3") is no revision: {spec, 0}.
struct StepsBack {
  std::string base;
  int back = 0;
};
StepsBack steps_back(const std::string& spec);

}  // namespace abtrack::experiment
