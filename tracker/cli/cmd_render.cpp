// `abtrack render` and `abtrack verify`: the document's regions and its plot against the records.
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "doc/plot.hpp"
#include "doc/regions.hpp"
#include "doc/render.hpp"
#include "record/record.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  auto v = util::split(s, '\n');
  if (!v.empty() && v.back().empty()) v.pop_back();
  return v;
}

// A minimal unified-style line diff (LCS) of one region; regions are small.
std::string line_diff(const std::string& name, const std::string& have, const std::string& want) {
  auto a = lines_of(have), b = lines_of(want);
  std::vector<std::vector<int>> l(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;)
    for (std::size_t j = b.size(); j-- > 0;)
      l[i][j] = a[i] == b[j] ? l[i + 1][j + 1] + 1 : std::max(l[i + 1][j], l[i][j + 1]);
  std::string out = fmt::format("--- region {} (document)\n+++ region {} (fresh render)\n", name, name);
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++i;
      ++j;
    } else if (j < b.size() && (i == a.size() || l[i][j + 1] >= l[i + 1][j])) {
      out += "+" + b[j++] + "\n";
    } else {
      out += "-" + a[i++] + "\n";
    }
  }
  return out;
}

}  // namespace

// The document's path and text in the work tree. Throws Error(usage) when there is none.
static std::pair<fs::path, std::string> work_tree_document(const experiment::Context& ctx) {
  fs::path file = ctx.repo.workdir() / ctx.plan.doc;
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw Error(Exit::usage, fmt::format("no document at {}", ctx.plan.doc), "run `abtrack init` to create it");
  return {file, ctx.repo.read_work_tree(ctx.plan.doc)};
}

// The plot's bytes in the work tree, or nothing when there is no such file.
static std::optional<std::string> work_tree_plot(const experiment::Context& ctx) {
  fs::path file = ctx.repo.workdir() / doc::plot_path(ctx.plan);
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  return ctx.repo.read_work_tree(doc::plot_path(ctx.plan));
}

int cmd_render(const Args& args) {
  for (const auto& a : args.rest) unknown_argument("render", a, {});
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  experiment::check_paths_are_ours(ctx);
  auto [file, text] = work_tree_document(ctx);
  auto records = experiment::head_records(ctx);
  // The plot is redrawn too (deterministic bytes from the same records), as a step would.
  auto [fresh, svg] = experiment::fresh_render(ctx, text, records);
  std::vector<std::string> written;
  if (fresh != text) {
    ctx.repo.write_work_tree(ctx.plan.doc, fresh);
    written.push_back(ctx.plan.doc);
  }
  if (svg && work_tree_plot(ctx) != svg) {
    ctx.repo.write_work_tree(doc::plot_path(ctx.plan), *svg);
    written.push_back(doc::plot_path(ctx.plan));
  }
  if (written.empty()) info(args.global, fmt::format("{} is up to date ({} runs)", ctx.plan.doc, records.size()));
  else
    info(args.global,
         fmt::format("rendered {} from {} runs (not committed)", fmt::join(written, " and "), records.size()));
  return 0;
}

int cmd_verify(const Args& args) {
  for (const auto& a : args.rest) unknown_argument("verify", a, {});
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  auto [file, text] = work_tree_document(ctx);
  auto records = experiment::head_records(ctx);
  std::vector<std::string> problems;
  auto have = doc::region_contents(text, ctx.plan.doc);
  bool plot = ctx.repo.with_head([&](const gitstore::TreeView& t) { return experiment::tree_has_plot(t, ctx.plan); });
  auto want = doc::render_regions(ctx.plan, records, doc::RenderOptions{plot});
  std::string diffs;
  for (const auto& [name, content] : have) {
    if (want[name] == content) continue;
    problems.push_back(fmt::format("{}: region '{}' differs from a fresh render", ctx.plan.doc, name));
    diffs += line_diff(name, content, want[name]);
  }
  if (have.empty()) problems.push_back(fmt::format("{}: has no abtrack region", ctx.plan.doc));
  // The plot is a rendering of the same records: it must be the bytes a step would commit.
  bool render_fixes = !diffs.empty();  // a differing region or plot: render redraws both
  if (auto svg = ctx.plan.plot ? doc::plot_svg(ctx.plan, records) : std::nullopt) {
    auto have_svg = work_tree_plot(ctx);
    if (!have_svg)
      problems.push_back(fmt::format("{}: missing (the records have something to plot)", doc::plot_path(ctx.plan)));
    else if (*have_svg != *svg)
      problems.push_back(fmt::format("{}: differs from a fresh plot of the records", doc::plot_path(ctx.plan)));
    render_fixes |= have_svg != svg;
  }
  for (const auto& s : ctx.repo.status({ctx.plan.runs_dir() + "/"}))
    problems.push_back(fmt::format("{}: not committed ({})", s.path, util::trim(s.code)));
  if (problems.empty()) {
    fmt::print("ok: {} matches {} committed runs of {}\n", ctx.plan.doc, records.size(), ctx.plan.experiment);
    return 0;
  }
  for (const auto& p : problems) fmt::print(stderr, "abtrack: {}\n", p);
  if (render_fixes)
    fmt::print(stderr, "  hint: `abtrack render` redraws the document's regions and its plot from the records\n");
  if (!diffs.empty()) fmt::print("{}", diffs);
  return static_cast<int>(Exit::run_failed);
}

}  // namespace abtrack::cli
