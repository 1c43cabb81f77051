// `abtrack init`: validate the plan, create the document, commit both.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "doc/regions.hpp"
#include "util/files.hpp"

namespace abtrack::cli {
namespace fs = std::filesystem;

int cmd_init(const Args& args) {
  for (const auto& a : args.rest) unknown_argument("init", a, {});
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  ctx.repo.check_identity();
  experiment::check_paths_are_ours(ctx);
  const fs::path doc_file = ctx.repo.workdir() / ctx.plan.doc;

  auto records = experiment::head_records(ctx);
  std::error_code ec;
  std::string base;
  if (fs::exists(doc_file, ec)) {
    base = ctx.repo.read_work_tree(ctx.plan.doc);
    if (doc::find_regions(base, ctx.plan.doc).empty())
      throw Error(Exit::usage, Location{ctx.plan.doc, 0, 0}, "the document has no abtrack region",
                  "add <!-- abtrack:begin results --> and <!-- abtrack:end results --> on lines of their own "
                  "(also summary and runs, if you want them)");
  } else {
    base = ctx.repo.with_head([&](const gitstore::TreeView& t) { return experiment::base_document(t, ctx); });
  }
  bool plot = ctx.repo.with_head([&](const gitstore::TreeView& t) { return experiment::tree_has_plot(t, ctx.plan); });
  std::string doc_text = experiment::rendered_document(base, ctx.plan, records, plot);
  if (doc_text != base || !fs::exists(doc_file, ec)) ctx.repo.write_work_tree(ctx.plan.doc, doc_text);

  std::vector<std::pair<std::string, std::string>> files;
  auto plan_rel = ctx.plan.file.lexically_relative(ctx.repo.workdir()).generic_string();
  if (plan_rel.empty() || plan_rel.starts_with(".."))
    warn(fmt::format("{} is outside the repository and is not committed", ctx.plan_name));
  else files.emplace_back(plan_rel, util::read_file(ctx.plan.file));
  files.emplace_back(ctx.plan.doc, doc_text);

  bool unchanged = ctx.repo.with_head([&](const gitstore::TreeView& t) {
    for (const auto& [path, content] : files)
      if (t.read(path) != content) return false;
    return true;
  });
  if (unchanged) {
    fmt::print("{} is already initialised: {} and the plan are committed\n", ctx.plan.experiment, ctx.plan.doc);
    return 0;
  }
  std::string message = fmt::format("abtrack({}): init\n\n{}\n\nAbtrack-Experiment: {}\n", ctx.plan.experiment,
                                    ctx.plan.title, ctx.plan.experiment);
  auto result = ctx.repo.commit([&](const gitstore::TreeView&) {
    return gitstore::Change{false, message, files, {}, {}};
  });
  for (const auto& p : result.kept_edits) warn(fmt::format("{} changed while init ran; your version is kept", p));
  fmt::print("initialised {}: {} cells; committed {} ({})\n", ctx.plan.experiment, ctx.plan.cells().size(),
             fmt::join(
                 [&] {
                   std::vector<std::string> names;
                   for (const auto& f : files) names.push_back(f.first);
                   return names;
                 }(),
                 ", "),
             result.commit.substr(0, 12));
  return 0;
}

}  // namespace abtrack::cli
