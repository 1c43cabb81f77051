#pragma once
// Rounds of `run`: the schedule of interleaved rounds, fixed or `rounds: auto` (one round at a
// time of the cells still undecided, until each comparison with its baseline is decided, the
// plan's max_rounds, or its budget). docs/statistics.md, "rounds: auto".
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "experiment/context.hpp"
#include "plan/plan.hpp"
#include "runner/run.hpp"

namespace abtrack::experiment {

// Cells that run back to back in a round (a group of revisions; or one cell).
using Unit = std::vector<plan::Cell>;
using Scheduled = std::vector<std::pair<plan::Cell, runner::Schedule>>;

// Appends round `round` of `units` to `out`: the units in an order shuffled by `rng` (Fisher–Yates
// over mt19937_64, whose output the standard fixes: a seed gives one schedule) when `shuffle`,
// each unit's cells forwards in odd rounds and backwards in even ones. Every entry gets `base`
// with its round and its position in `out`.
void append_round(Scheduled& out, const std::vector<Unit>& units, int round, runner::Schedule base,
                  std::mt19937_64& rng, bool shuffle);

// `rounds` rounds of `units` (append_round's, round after round, from an mt19937_64 seeded with
// `seed`). `interleaved`: the units' order is shuffled in each round and every entry gets a new
// batch id (new_batch_id), so a cell pairs with its baseline round by round; otherwise the units
// keep their order and no batch is named.
Scheduled fixed_rounds(const std::vector<Unit>& units, int rounds, std::uint64_t seed, bool interleaved);

// What `rounds: auto` needs to know.
struct AutoRounds {
  int max_rounds = 20;
  std::optional<double> budget_s;
  std::uint64_t seed = 0;
  bool shuffle = true;  // shuffle the units in each round
  bool dry_run = false;
  // Continue this batch after round `after_round` instead of starting a new one
  // (continue_unfinished_batch sets them).
  std::string batch;
  int after_round = 0;
};

// When the experiment's latest run belongs to a `rounds: auto` batch that stopped (its budget, an
// interrupted run, a lower --max-rounds) with a comparison undecided and rounds left before
// `opts.max_rounds`: points `opts` at that batch and returns the cells it ran, plan order, so that
// `run` continues it rather than starting over (a confidence sequence stays valid however long it
// is watched, so the rounds of both invocations judge together). Otherwise nullopt, also when
// the code changed since the batch's latest run (a plan without revisions: its new rounds would
// pool apart, with only the rounds the batch has left; `progress` says so and that `run --all`
// starts a batch on this code; not checked in a dry run). Throws Error(environment) when that
// batch ran on other kinds of GPU than this machine's (its rounds would not pair with this card's).
std::optional<std::vector<plan::Cell>> continue_unfinished_batch(const Context& ctx, Progress& progress,
                                                                 AutoRounds& opts);

// Runs `rounds: auto` over `units`: round after round, each through `run_round` (one round's
// schedule: the units still in play), judging after each round from 2 on the paired comparisons
// of every variant cell with its baseline (the anytime-valid analysis, Holm over the cells of
// this invocation): a cell is decided when each of its metrics with `better:` reads better,
// worse or equivalent. A unit stays in play while it holds an undecided cell or the baseline of
// one. Stops when none is left, at max_rounds, or before a round the budget cannot hold; what
// each cell came to is info to `progress`. `records` receives every run's record (as
// run_serial's opts.records).
void run_auto_rounds(Context& ctx, Progress& progress, const std::vector<Unit>& units, const AutoRounds& opts,
                     std::vector<record::Record>& records, const std::function<void(const Scheduled&)>& run_round);

// Each cell as a unit of its own.
std::vector<Unit> single_units(const std::vector<plan::Cell>& cells);

// For `run --dry-run`: from the pools already recorded, the rounds a fixed design and
// `rounds: auto` are expected to need to decide each variant cell, one line per cell.
std::vector<std::string> expected_rounds(const Context& ctx, int max_rounds);

}  // namespace abtrack::experiment
