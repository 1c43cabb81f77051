#pragma once
// One step of a bisect (experiment/bisect.hpp) measured until it is decided: step 0, bad against
// good, and each later step, the commit tested against good and bad in the same rounds, batch
// after batch of rounds run by run_revisions without committing a run, judged by stats/bisect.hpp.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "experiment/bisect_state.hpp"
#include "experiment/context.hpp"
#include "experiment/progress.hpp"

namespace abtrack::experiment {

// The wall time spent and allowed (--budget), and what an invocation has cost so far.
class Budget {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Budget(std::optional<double> limit_s) : m_start(Clock::now()), m_limit_s(limit_s) {}
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

// Step 0: bad against good, rounds added until bad is shown worse beyond min_effect, or not
// worse, or the rounds (budget) run out; fills `s` (judgement, line, summary, runs). Both are
// built first; either failing is an Error(run_failed). `progress` hears what the step does (the
// builds, with Bisect::batch_lines a line per batch of rounds), `runs` how the runs go.
void confirm(Context& ctx, Progress& progress, Progress& runs, const Bisect& b, const std::string& good,
             const std::string& bad, Budget& budget, BisectStep& s);

// A later step: builds `s.commit` first (one that does not build is skipped at once, nothing
// measured), then measures it against good and bad in the same rounds, rounds added until it lies
// on one side of their midpoint (like good, like bad) or the rounds (budget) run out (undecided).
// A step whose runs give no complete round is skipped. Fills `s` as confirm does.
void probe(Context& ctx, Progress& progress, Progress& runs, const Bisect& b, const std::string& good,
           const std::string& bad, Budget& budget, BisectStep& s);

}  // namespace abtrack::experiment
