// `abtrack drop RUN`: takes back a run in one commit. The record goes, the document and the plot
// are rendered again without it, and a tombstone (runs/<experiment>/NNNN.dropped) keeps its
// number taken: the next run is numbered past every run there ever was.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "doc/plot.hpp"
#include "experiment/commit_run.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

// "runs/<experiment>/0007.dropped": the record's path with the other extension.
std::string tombstone_path(const std::string& experiment, int run) {
  std::string p = record::record_path(experiment, run);
  return p.substr(0, p.size() - 5) + ".dropped";
}

std::string tombstone(const record::Record& r, const std::string& reason) {
  auto cell = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.cell) cell[k] = v;
  nlohmann::ordered_json j = {{"experiment", r.experiment},
                              {"run", r.run},
                              {"cell", cell},
                              {"outcome", runner::to_string(r.data.outcome)},
                              {"measurement", r.data.id},
                              {"dropped", runner::utc_now()},
                              {"reason", reason}};
  return j.dump(2) + "\n";
}

std::string message(const record::Record& r, const std::string& reason) {
  const std::string& when = r.data.started.empty() ? r.data.finished : r.data.started;
  std::string body = fmt::format("Run {} {} ({}{}) is taken back{}.\nIts number is not used again.", r.run, r.label(),
                                 runner::to_string(r.data.outcome), when.empty() ? "" : ", measured " + when,
                                 reason.empty() ? "" : ": " + reason);
  return fmt::format("abtrack({}): drop run {}\n\n{}\n\nAbtrack-Experiment: {}\nAbtrack-Dropped: {}\n", r.experiment,
                     r.run, body, r.experiment, r.run);
}

}  // namespace

int cmd_drop(const Args& args) {
  std::optional<int> run;
  std::string reason;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto v = take_value(args.rest, i, "--reason")) {
      reason = util::trim(*v);
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      std::replace(reason.begin(), reason.end(), '\r', ' ');
    } else if (!args.rest[i].empty() && args.rest[i][0] == '-') {
      unknown_argument("drop", args.rest[i], {"--reason"});
    } else {
      auto n = util::parse_double(args.rest[i]);
      if (run)
        throw Error(Exit::usage, fmt::format("drop takes one run, not '{}' too", args.rest[i]), "abtrack drop RUN");
      if (!n || *n < 1 || *n > 999999999 || std::floor(*n) != *n)
        throw Error(Exit::usage, fmt::format("drop: '{}' is not a run number", args.rest[i]),
                    "abtrack log lists the runs");
      run = static_cast<int>(*n);
    }
  }
  if (!run)
    throw Error(Exit::usage, "drop needs a run number", "abtrack drop RUN [--reason TEXT]; abtrack log lists the runs");
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  const std::string path = record::record_path(ctx.plan.experiment, *run);
  const std::string grave = tombstone_path(ctx.plan.experiment, *run);
  // Wrong numbers are usage errors, found before anything is checked or written.
  auto missing = [&](const gitstore::TreeView& t) -> std::optional<Error> {
    if (t.read(path)) return std::nullopt;
    if (t.read(grave))
      return Error(Exit::usage, fmt::format("run {} was dropped already ({})", *run, grave),
                   "abtrack log lists the runs");
    return Error(Exit::usage, fmt::format("no run {} of {} at HEAD (no {})", *run, ctx.plan.experiment, path),
                 "abtrack log lists the runs");
  };
  if (auto e = ctx.repo.with_head(missing)) throw *e;
  experiment::preflight(ctx, progress);
  record::Record dropped;
  ctx.repo.commit([&](const gitstore::TreeView& tip) {
    if (auto e = missing(tip)) throw *e;  // another writer dropped it meanwhile
    auto records = experiment::load_records(ctx, tip);
    auto it = std::find_if(records.begin(), records.end(), [&](const record::Record& r) { return r.run == *run; });
    if (it == records.end()) throw Error(Exit::environment, fmt::format("cannot read the record {}", path));
    dropped = *it;
    records.erase(it);
    gitstore::Change change;
    change.message = message(dropped, reason);
    change.removals.push_back(path);
    change.files.emplace_back(grave, tombstone(dropped, reason));
    // The document and the plot as a fresh render of the records left (what `verify` checks).
    auto svg = ctx.plan.plot ? doc::plot_svg(ctx.plan, records) : std::nullopt;
    bool plot = svg.has_value() || experiment::tree_has_plot(tip, ctx.plan);
    change.files.emplace_back(
        ctx.plan.doc, experiment::rendered_document(experiment::base_document(tip, ctx), ctx.plan, records, plot));
    if (svg) change.files.emplace_back(doc::plot_path(ctx.plan), std::move(*svg));
    return change;
  });
  fmt::print("dropped run {} {} ({}); its number is not used again\n", dropped.run, dropped.label(),
             runner::to_string(dropped.data.outcome));
  return 0;
}

}  // namespace abtrack::cli
