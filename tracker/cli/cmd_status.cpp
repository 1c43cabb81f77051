// `abtrack status`: every cell with its pool's outcome, or pending.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "record/compare.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::cli {

int cmd_status(const Args& args) {
  bool json = false;
  for (const auto& a : args.rest) {
    if (a == "--json") json = true;
    else unknown_argument("status", a, {"--json"});
  }
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  auto records = experiment::head_records(ctx);
  auto cells = record::cells_with_runs(ctx.plan, records);
  std::size_t pending = 0, pass = 0, fail = 0, invalid = 0;
  for (const auto& c : cells) {
    if (!c.latest()) ++pending;
    else if (c.outcome() == runner::Outcome::pass) ++pass;
    else if (c.outcome() == runner::Outcome::fail) ++fail;
    else ++invalid;
  }
  if (json) {
    nlohmann::ordered_json out{
        {"experiment", ctx.plan.experiment},
        {"doc", ctx.plan.doc},
        {"runs", records.size()},
        {"counts",
         {{"cells", cells.size()}, {"pass", pass}, {"fail", fail}, {"invalid", invalid}, {"pending", pending}}}};
    auto arr = nlohmann::ordered_json::array();
    for (const auto& c : cells) {
      nlohmann::ordered_json cell = nlohmann::ordered_json::object();
      for (std::size_t i = 0; i < ctx.plan.axes.size(); ++i) cell[ctx.plan.axes[i].name] = c.cell.values[i];
      nlohmann::ordered_json e{{"cell", cell}, {"label", ctx.plan.label(c.cell)}};
      if (const auto* r = c.latest()) {
        e["status"] = runner::to_string(c.outcome());
        e["run"] = r->run;
        e["latest"] = runner::to_string(r->data.outcome);  // differs from status when the latest run is invalid
        e["runs"] = c.runs.size();
        e["pool"] = c.pool().size();
        e["reason"] = c.deciding()->data.reason;
        nlohmann::ordered_json medians = nlohmann::ordered_json::object();
        for (const auto& [name, s] : c.pooled_samples())
          if (!s.empty()) medians[name] = stats::median(s);
        e["medians"] = medians;
      } else {
        e["status"] = "pending";
        e["run"] = nullptr;
        e["runs"] = 0;
      }
      arr.push_back(e);
    }
    out["cells"] = arr;
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("{}: {} cells — {} pass, {} fail, {} invalid, {} pending ({} runs)\n", ctx.plan.experiment, cells.size(),
             pass, fail, invalid, pending, records.size());
  std::size_t width = 0;
  for (const auto& c : cells) width = std::max(width, ctx.plan.label(c.cell).size());
  for (const auto& c : cells) {
    std::string label = ctx.plan.label(c.cell);
    if (const auto* r = c.latest()) {
      std::string line = fmt::format("  {:<{}}  {:<8} run {}", label, width, runner::to_string(c.outcome()), r->run);
      if (c.pool().size() > 1) line += fmt::format(" (pool of {})", c.pool().size());
      // An invalid latest run leaves the pool's earlier valid runs to decide: say so.
      if (r->data.outcome != c.outcome()) line += fmt::format(" (latest run {})", runner::to_string(r->data.outcome));
      auto pooled = c.pooled_samples();
      for (const auto& m : ctx.plan.metrics) {
        auto s = pooled.find(m.name);
        if (s != pooled.end() && !s->second.empty())
          line += fmt::format("  {} {}", m.name, util::format_number(stats::median(s->second)));
      }
      fmt::print("{}\n", line);
    } else {
      fmt::print("  {:<{}}  pending\n", label, width);
    }
  }
  return 0;
}

}  // namespace abtrack::cli
