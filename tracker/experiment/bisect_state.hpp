#pragma once
// What a bisect (experiment/bisect.hpp) knows and commits: its setup, its steps and its state,
// runs/<experiment>/bisect/<id>/bisect.json to resume or re-judge it, and the log for people
// beside it, with the lines a step and a finished bisect print.
#include <array>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/context.hpp"
#include "experiment/progress.hpp"
#include "gitstore/repository.hpp"
#include "plan/plan.hpp"
#include "stats/bisect.hpp"
#include "stats/interval.hpp"

namespace abtrack::experiment {

// The arms of a bisect's rounds, as stats::ProbeArm: the indexes of Bisect::names and cells.
inline constexpr std::size_t kGood = 0, kTested = 1, kBad = 2;
inline constexpr const char* kArmWords[] = {"good", "tested", "bad"};

// A bisect as set up for this invocation.
struct Bisect {
  // The bisect's plan (bisect_plan): the user's with a `rev` axis whose values are `names` (good,
  // the commit tested, bad), and `cells` the bisected cell of each.
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
  bool batch_lines = true;  // a line of info after each batch of rounds
};

// How a step judged its commit.
enum class Judgement { good, bad, skip, undecided };

// "good", "bad", "skip", "undecided", and back (anything else reads as skip). Never throw.
std::string_view to_string(Judgement j);
Judgement parse_judgement(const std::string& s);
// What the search learns from a judgement: the side, or nullopt for a skipped commit.
std::optional<stats::Side> side_of(Judgement j);
// The judgement of a tested commit from the side its rounds put it on, and of step 0 (bad
// against good) from its confirmation: worse is bad, not worse good.
Judgement judgement_of(stats::Side side);
Judgement judgement_of(stats::Confirmation c);

// One measured (or skipped) commit. Step 0 is bad measured against good.
struct BisectStep {
  int number = 0;
  std::ptrdiff_t index = -1;  // the commit's place on the path (step 0: the last, bad)
  std::string commit;
  Judgement like = Judgement::skip;
  std::string line;                  // what was printed for it
  nlohmann::json summary = nullptr;  // the estimate (null when nothing was compared)
  nlohmann::json runs = nlohmann::json::array();
};

// A bisect as committed in runs/<experiment>/bisect/<id>/bisect.json.
struct BisectState {
  std::string id;
  std::string good, bad, good_spec, bad_spec;
  std::vector<std::string> path;  // the commits of the user from good (excluded) to bad, oldest first
  int left_out = 0;               // abtrack's own commits left out of the path
  // Once finished: "found", "range" (skips leave several), "undecided" (a step ran out of rounds
  // or budget), "not worse" or "unconfirmed" (step 0 could not show bad worse).
  std::string status = "measuring";
  std::string plan_sha256;  // of the plan the committed steps were measured with
  // The kinds of GPU of the machine that measured its steps (runner::gpu_kinds); unset in a
  // state written before it was kept.
  std::optional<std::set<std::string>> gpus;
  std::vector<BisectStep> steps;
};

// The search with the steps of `st` applied (step 0 tests bad itself: nothing to apply).
stats::BisectSearch search_of(const BisectState& st);

// The status after the steps after step 0: "undecided" after an undecided step, else "found"
// or "range" once the search has nothing left to pick, else "measuring".
std::string status_after(const stats::BisectSearch& search, Judgement last);

// How many steps a bisect expects by `step`: the steps so far and ceil(log2) of what is left.
int expected_steps(const stats::BisectSearch& search, int step);

// The bisect's folder, runs/<experiment>/bisect/<id>.
std::string bisect_folder(const plan::Plan& plan, const std::string& id);

// The committed state as JSON (bisect.json), and back. parse_state throws Error(environment)
// when `text` does not read as a state whose steps fit its path (`file` names it).
nlohmann::json to_json(const BisectState& st, const Bisect& b);
BisectState parse_state(const std::string& text, const std::string& file);

// The printed line of a step ("step 2/3: 1a2b3c4 subject: bad: ..."), `total` the steps expected.
std::string step_line(const gitstore::Repository& repo, const BisectState& st, const BisectStep& s, int total);
// The result lines of a finished bisect.
std::vector<std::string> result_lines(const gitstore::Repository& repo, const BisectState& st, const Bisect& b);
// "at most 128 rounds a step, alpha 0.05 (0.0125 a step), min_effect 10%".
std::string options_text(const Bisect& b);
// The log for people, like `git bisect log`: what was bisected, each step with its measurement
// and judgement, and the result.
std::string log_text(const gitstore::Repository& repo, const BisectState& st, const Bisect& b);

// Commits the state and its log as the next step of the bisect: one commit, on HEAD's branch,
// `subject` in its message. Throws Error(environment) when the state committed meanwhile is not
// the one before this step. A file of the user's kept is a warning to `progress`.
void commit_state(Context& ctx, Progress& progress, const BisectState& st, const Bisect& b, const std::string& subject);

// Text the step lines, the log and the result share.
std::string short_id(const std::string& commit);
// "1a2b3c4 subject", or the short id alone for a commit without a subject.
std::string named(const gitstore::Repository& repo, const std::string& commit);
// "+12.3%", "+inf%".
std::string pct(double v);
// "CI [+1.0%, +2.0%]", "CI unbounded".
std::string ci_pct(const stats::Interval& ci);
// "12 rounds (36 invocations, 8.1 s)".
std::string amount(std::size_t rounds, std::size_t invocations, double seconds);

}  // namespace abtrack::experiment
