#pragma once
// `run` and `step` for a plan with `revisions:`: the revisions of each cell measured back to
// back, round after round, in an order that alternates between rounds, so drift on the machine
// falls on every revision alike and a cell pairs with its baseline round by round.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiment/context.hpp"
#include "experiment/revisions.hpp"
#include "experiment/rounds.hpp"
#include "experiment/scheduler.hpp"

namespace abtrack::experiment {

struct RevisionRunOptions {
  std::map<std::string, std::string> overrides;  // --rev NAME=REVISION
  int rounds = 0;                                // 0: the plan's `rounds:`, else 10
  std::optional<AutoRounds> automatic;           // rounds: auto instead of a number of rounds
  std::optional<std::uint64_t> seed;             // shuffles the order of the groups in each round
  bool all = false;                // every cell, not only those without a run on their code (--rev implies it)
  bool rebuild = false;            // build every revision again (--rebuild)
  bool retry = false;              // also the cells whose latest run on their code failed a gate
  std::optional<plan::Cell> only;  // `step --cell`: this cell alone, once
  bool step = false;               // `step`: one run of the first cell without one
  // `bisect`: exactly these cells (of one group), every round, whether they have runs or not.
  std::optional<std::vector<plan::Cell>> group;
  RunOptions run;  // how the runs are made: dry run, early stop, commit or not, where results go
};

// The groups of cells measured together: the cells that differ only in `rev`, in plan order.
std::vector<std::vector<plan::Cell>> revision_groups(const plan::Plan& plan);

// Resolves, writes and builds the revisions, then measures through the one run path
// (run_serial, or run_parallel for a plan with gpus:), each cell in its revision's tree: every
// group that has a cell without a valid run on its revision's current code and recipe (or every
// group, with `all`), `rounds` rounds, one commit per run. Returns the exit code (1 when a run
// failed or was invalid); throws what the run path throws (interrupt, early stop).
int run_revisions(Context& ctx, Progress& progress, const RevisionRunOptions& opts);

}  // namespace abtrack::experiment
