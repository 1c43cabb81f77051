// `abtrack clean`: remove the work trees of revisions (.git/abtrack/trees/) the plan no longer
// names, keeping the most recently used and those a running abtrack uses.
#include <cmath>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "experiment/code_identity.hpp"
#include "experiment/revisions.hpp"
#include "util/text.hpp"

namespace abtrack::cli {

int cmd_clean(const Args& args) {
  int keep = 8;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto v = take_value(args.rest, i, "--keep")) {
      auto n = util::parse_double(*v);
      if (!n || *n < 0 || *n > 100000 || std::floor(*n) != *n)
        throw Error(Exit::usage, fmt::format("--keep must be a whole number from 0, not '{}'", *v));
      keep = static_cast<int>(*n);
    } else {
      unknown_argument("clean", args.rest[i], {"--keep"});
    }
  }
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  // The trees the plan's revisions name now (built by its build command) are kept whatever
  // --keep says (the work tree's changes are not snapshot for this: its newest tree is among the
  // most recently used).
  std::vector<std::string> named;
  const auto data = experiment::data_paths(ctx);
  for (const auto& [name, spec] : ctx.plan.revisions)
    if (spec != experiment::kWorktree)
      if (auto commit = ctx.repo.resolve(spec))
        named.push_back(experiment::tree_key(ctx.repo.tree_without(*commit, data), ctx.plan.build));
  auto report = experiment::clean_trees(ctx, progress, named, keep);
  auto rel = [&](const std::filesystem::path& p) { return p.lexically_relative(ctx.repo.workdir()).generic_string(); };
  for (const auto& p : report.removed) fmt::print("removed {}\n", rel(p));
  for (const auto& p : report.in_use) fmt::print("kept {}: in use by a running abtrack\n", rel(p));
  for (const auto& [p, why] : report.failed) warn(fmt::format("could not remove {}: {}", rel(p), why));
  info(args.global, fmt::format("removed {} tree{}; kept those the plan names, the {} most recently used{}",
                                report.removed.size(), report.removed.size() == 1 ? "" : "s", keep,
                                report.in_use.empty() ? "" : fmt::format(" and {} in use", report.in_use.size())));
  return 0;
}

}  // namespace abtrack::cli
