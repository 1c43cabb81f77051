#include "experiment/code_identity.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doc/plot.hpp"
#include "record/record.hpp"
#include "util/files.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"

namespace abtrack::experiment {
namespace fs = std::filesystem;
namespace {

fs::path outputs_file(const Context& ctx) { return ctx.repo.state_dir() / "outputs"; }

// The outputs seen so far, one repo-relative path a line.
std::vector<std::string> seen_outputs(const Context& ctx) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::exists(outputs_file(ctx), ec)) return out;
  for (auto line : util::split(util::read_file(outputs_file(ctx)), '\n'))
    if (!util::trim(line).empty()) out.emplace_back(line);
  return out;
}

// A path the plan names relative to `dir` (repo-relative), made repo-relative; nullopt when it
// leads outside the repository.
std::optional<std::string> repo_relative(const std::string& dir, const std::string& path) {
  if (path.empty() || path.starts_with('/')) return std::nullopt;
  std::string p = (fs::path(dir) / path).lexically_normal().generic_string();
  if (p.empty() || p == "." || p == ".." || p.starts_with("../")) return std::nullopt;
  return p;
}

}  // namespace

gitstore::PathSet data_paths(const Context& ctx) {
  std::set<std::string> paths{std::string(plan::kRunsFolder) + "/"};
  for (auto& f : doc::document_files(ctx.plan.doc)) paths.insert(std::move(f));
  // The plan itself: what it says about running the code is in each run's recipe
  // (plan::recipe); its prose is not code, so editing `why:` keeps the pools and the builds.
  if (auto rel = ctx.plan.file.lexically_relative(ctx.repo.workdir()).generic_string();
      !rel.empty() && !rel.starts_with(".."))
    paths.insert(rel);
  // The documents (and plots) of the other experiments, as their newest records name them.
  ctx.repo.with_head([&](const gitstore::TreeView& tree) {
    for (const auto& other : other_documents(tree, ctx.plan.experiment))
      for (auto& f : doc::document_files(other)) paths.insert(std::move(f));
    return 0;
  });
  // The plan's declared outputs, for every cell: artifacts are repo-relative, metric files
  // relative to the commands' working directory.
  const bool declares =
      !ctx.plan.artifacts.empty() || std::any_of(ctx.plan.metrics.begin(), ctx.plan.metrics.end(),
                                                 [](const plan::Metric& m) { return !m.file.empty(); });
  if (declares)
    for (const auto& cell : ctx.plan.cells()) {
      for (const auto& a : ctx.plan.artifacts)
        if (auto p = repo_relative("", plan::substitute(ctx.plan, cell, a, false))) paths.insert(*p);
      for (const auto& o : ctx.plan.artifact_options)  // an artifact's build log is an output too
        if (!o.build_log.empty())
          if (auto p = repo_relative("", plan::substitute(ctx.plan, cell, o.build_log, false))) paths.insert(*p);
      for (const auto& m : ctx.plan.metrics)
        if (!m.file.empty())
          if (auto p = repo_relative(ctx.plan.workdir, plan::substitute(ctx.plan, cell, m.file, false)))
            paths.insert(*p);
    }
  for (auto& p : seen_outputs(ctx)) paths.insert(std::move(p));
  return {paths.begin(), paths.end()};
}

record::Code code_identity(const Context& ctx, Progress& progress, std::optional<bool> dirty) {
  record::Code code;
  // abtrack's own run commits change only data, so the code of HEAD is the code its run named
  // (for people reading Abtrack-Code; pooling compares the content identity).
  auto head = ctx.repo.head_entry();
  if (head) {
    code.commit = head->commit;
    std::string named = head->trailer("Abtrack-Code");
    // Only while HEAD still holds that code: a rebase, a cherry-pick or a commit squeezed in
    // under a run commit leaves the trailer naming code HEAD no longer has.
    std::vector<std::string> data = doc::document_files(ctx.plan.doc);
    data.push_back(std::string(plan::kRunsFolder));
    if (!head->trailer("Abtrack-Run").empty() && named.size() >= 40 && named.substr(0, 6) != "unborn" &&
        ctx.repo.same_tree_except(head->commit, named.substr(0, 40), data))
      code.commit = named.substr(0, 40);
  }
  // (outputs of the previous cell were noted when its run was drafted)
  const gitstore::PathSet data = data_paths(ctx);
  code.dirty = dirty ? *dirty : ctx.repo.dirty({std::string(plan::kRunsFolder)}, data);
  util::trace("dirty scan");
  std::optional<std::string> tree_of = head ? std::optional<std::string>(head->commit) : std::nullopt;
  if (code.dirty) {
    try {
      code.snapshot =
          ctx.repo.snapshot(fmt::format("abtrack({}): snapshot of the work tree", ctx.plan.experiment),
                            code.commit.empty() ? std::nullopt : std::optional<std::string>(code.commit), data);
      tree_of = code.snapshot;
    } catch (const Error& e) {
      progress.warn("could not snapshot the work tree (the record says dirty without a snapshot): " +
                    e.diagnostics().front().message);
      return code;
    }
  }
  code.tree = ctx.repo.tree_without(tree_of, data);
  util::trace("code identity");
  return code;
}

namespace {
// `path` with each of the cell's values that stands alone in its file name ("out-8.json") as '*'.
std::string with_values_starred(const std::string& path, const plan::Cell& cell) {
  const std::size_t name = path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1;
  std::string out = path.substr(0, name);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = name; i < path.size();) {
    bool starred = false;
    if (i == name || !alnum(path[i - 1]))
      for (const auto& v : cell.values) {
        const std::size_t end = i + v.size();
        if (!v.empty() && path.compare(i, v.size(), v) == 0 && (end >= path.size() || !alnum(path[end]))) {
          out += '*';
          i = end;
          starred = true;
          break;
        }
      }
    if (!starred) out += path[i++];
  }
  return out;
}

bool by_version(const gitstore::UntrackedFile& a, const gitstore::UntrackedFile& b) {
  return std::tie(a.path, a.size, a.mtime_ns) < std::tie(b.path, b.size, b.mtime_ns);
}
}  // namespace

void watch_outputs(const Context& ctx) { ctx.untracked_seen = ctx.repo.untracked({std::string(plan::kRunsFolder)}); }

namespace {

fs::path candidates_file(const Context& ctx) { return ctx.repo.state_dir() / "output-candidates"; }

// The files written once so far, as "path<TAB>pattern" lines (the pattern: the path with the
// values of the cell that wrote it starred).
std::vector<std::pair<std::string, std::string>> read_candidates(const Context& ctx) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  if (!fs::exists(candidates_file(ctx), ec)) return out;
  for (auto line : util::split(util::read_file(candidates_file(ctx)), '\n')) {
    auto tab = line.find('\t');
    if (tab != std::string_view::npos)
      out.emplace_back(std::string(line.substr(0, tab)), std::string(line.substr(tab + 1)));
  }
  return out;
}

}  // namespace

std::vector<std::string> note_outputs(const Context& ctx, Progress& progress, const plan::Cell* cell) {
  if (!ctx.untracked_seen) return {};
  auto now = ctx.repo.untracked({std::string(plan::kRunsFolder)});
  std::vector<std::string> fresh;
  for (const auto& f : now)
    if (!std::binary_search(ctx.untracked_seen->begin(), ctx.untracked_seen->end(), f, by_version))
      fresh.push_back(f.path);
  ctx.untracked_seen = std::move(now);
  auto seen = seen_outputs(ctx);
  std::erase_if(fresh, [&](const std::string& p) { return std::find(seen.begin(), seen.end(), p) != seen.end(); });
  if (fresh.empty()) return {};
  // Written once, a file may as well be the user's (created while the command ran): it stays code.
  // Written again by a later run (itself, or a file of the same pattern for another cell), it is
  // the commands' output.
  auto candidates = read_candidates(ctx);
  std::vector<std::string> confirmed;
  for (const auto& p : fresh) {
    const std::string pattern = cell ? with_values_starred(p, *cell) : p;
    bool again = false;
    for (const auto& [path, pat] : candidates) again = again || path == p || pat == pattern;
    if (!again) {
      candidates.emplace_back(p, pattern);
      continue;
    }
    confirmed.push_back(p);
    for (const auto& [path, pat] : candidates)
      if ((path == p || pat == pattern) && std::find(confirmed.begin(), confirmed.end(), path) == confirmed.end())
        confirmed.push_back(path);
  }
  std::erase_if(candidates, [&](const auto& c) {
    return std::find(confirmed.begin(), confirmed.end(), c.first) != confirmed.end();
  });
  std::string text;
  for (const auto& [path, pat] : candidates) text += path + "\t" + pat + "\n";
  util::write_file_atomic(candidates_file(ctx), text);
  if (confirmed.empty()) return {};
  text.clear();
  for (const auto& p : seen) text += p + "\n";
  for (const auto& p : confirmed) text += p + "\n";
  util::write_file_atomic(outputs_file(ctx), text);
  // The .gitignore lines: the cell's values in a file name become '*' (out-8.json -> out-*.json).
  std::set<std::string> lines;
  for (const auto& p : confirmed) lines.insert("/" + (cell ? with_values_starred(p, *cell) : p));
  // Once an invocation: outputs of the other cells that the same lines cover go in silently.
  static std::set<std::string> warned;
  if (!std::includes(warned.begin(), warned.end(), lines.begin(), lines.end())) {
    warned.insert(lines.begin(), lines.end());
    std::vector<std::string> named(confirmed.begin(), confirmed.begin() + std::min<std::size_t>(confirmed.size(), 5));
    progress.warn(fmt::format(
        "the commands wrote untracked files again ({}{}): abtrack counts them as outputs, not code (they stay "
        "out of snapshots and the code's identity; .git/abtrack/outputs lists them). To keep them out of "
        "`git status`, add to .gitignore:\n  {}",
        fmt::join(named, ", "),
        confirmed.size() > named.size() ? fmt::format(" and {} more", confirmed.size() - named.size()) : "",
        fmt::join(lines, "\n  ")));
  }
  return confirmed;
}

record::Code without_outputs(const Context& ctx, record::Code code) {
  if (!code.dirty || code.snapshot.empty()) return code;
  const gitstore::PathSet data = data_paths(ctx);
  code.tree = ctx.repo.tree_without(code.snapshot, data);
  // The snapshot differed from its commit only in what are now outputs: the code is the commit's.
  if (code.tree ==
      ctx.repo.tree_without(code.commit.empty() ? std::nullopt : std::optional<std::string>(code.commit), data)) {
    code.dirty = false;
    code.snapshot.clear();
  }
  return code;
}

}  // namespace abtrack::experiment
