// `abtrack bisect`: the first commit between a good and a bad revision that made a cell worse
// (experiment/bisect.hpp does the bisecting). This file reads the arguments and gives the engine
// the terminal: its lines, and the runs' progress quieted, since the bisect says what they measured.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "experiment/bisect.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

// --max-rounds N (or the old --rounds N): a whole number from 2 to 10000.
int max_rounds_arg(const std::string& v, bool old_name) {
  auto n = util::parse_double(v);
  if (!n || *n < 2 || *n > 10000 || std::floor(*n) != *n) {
    if (old_name)
      throw Error(Exit::usage,
                  fmt::format("--rounds (now --max-rounds) must be a whole number from 2 to 10000, not '{}'", v),
                  "the most rounds a step measures before it gives up (default 128)");
    throw Error(
        Exit::usage, fmt::format("--max-rounds must be a whole number from 2 to 10000, not '{}'", v),
        "the most rounds a step measures before it gives up (default 128); one round cannot tell a change from noise");
  }
  if (old_name)
    warn("--rounds is now --max-rounds: the most rounds a step measures (it stops as soon as it is decided)");
  return static_cast<int>(*n);
}

experiment::BisectOptions parse_options(const Args& args) {
  experiment::BisectOptions o;
  std::optional<std::string> good_spec, bad_spec;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto v = take_value(args.rest, i, "--good")) {
      good_spec = *v;
    } else if (auto v1 = take_value(args.rest, i, "--bad")) {
      bad_spec = *v1;
    } else if (auto v2 = take_value(args.rest, i, "--cell")) {
      o.cell = *v2;
    } else if (auto v3 = take_value(args.rest, i, "--metric")) {
      o.metric = *v3;
    } else if (auto v4 = take_value(args.rest, i, "--max-rounds")) {
      o.max_rounds = max_rounds_arg(*v4, false);
    } else if (auto v4r = take_value(args.rest, i, "--rounds")) {
      o.max_rounds = max_rounds_arg(*v4r, true);
    } else if (auto v5 = take_value(args.rest, i, "--budget")) {
      if (!util::parse_duration(*v5))
        throw Error(Exit::usage, fmt::format("--budget '{}' is not a duration", *v5),
                    "the wall time the bisect may take, e.g. --budget 90s, 30m, 2h or 1h30m");
      o.budget = *v5;
    } else if (auto v6 = take_value(args.rest, i, "--min-effect")) {
      std::string_view text = *v6;
      if (text.ends_with('%')) text.remove_suffix(1);
      const auto p = util::parse_double(text);
      if (!p || !(*p >= 0 && *p < 100))
        throw Error(Exit::usage, fmt::format("--min-effect '{}' is not a percentage from 0% to below 100%", *v6),
                    "how much worse bad must be than good to bisect, e.g. --min-effect 2%");
      o.min_effect_pct = *p;
    } else if (auto v7 = take_value(args.rest, i, "--seed")) {
      auto n = util::parse_double(*v7);
      if (!n || *n < 0 || std::floor(*n) != *n || *n > 9e15)
        throw Error(Exit::usage, fmt::format("--seed must be a whole number, not '{}'", *v7));
      o.seed = static_cast<std::uint64_t>(*n);
    } else {
      unknown_argument("bisect", args.rest[i],
                       {"--good", "--bad", "--cell", "--metric", "--max-rounds", "--budget", "--min-effect", "--seed"});
    }
  }
  if (!good_spec || !bad_spec)
    throw Error(Exit::usage, "bisect needs --good REV and --bad REV",
                "e.g. abtrack bisect --good v1.2 --bad main --cell batch=64");
  o.good_spec = *good_spec;
  o.bad_spec = *bad_spec;
  o.batch_lines = !args.global.quiet;
  return o;
}

}  // namespace

int cmd_bisect(const Args& args) {
  const experiment::BisectOptions options = parse_options(args);
  util::install_interrupt_handlers();
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  GlobalOptions quiet = args.global;  // the bisect prints its own progress, a line per batch
  quiet.quiet = true;
  TerminalProgress runs(quiet);
  return experiment::bisect(ctx, progress, runs, options);
}

}  // namespace abtrack::cli
