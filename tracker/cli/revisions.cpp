#include "cli/revisions.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/code_identity.hpp"
#include "util/files.hpp"
#include "util/lock.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace fs = std::filesystem;

void add_revision_override(const plan::Plan& plan, const std::string& spec, std::map<std::string, std::string>& overrides) {
  std::vector<std::string> names;
  for (const auto& [name, _] : plan.revisions) names.push_back(name);
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw Error(Exit::usage, fmt::format("--rev '{}' is not NAME=REVISION", spec),
                names.empty() ? "the plan has no revisions:" : fmt::format("e.g. --rev {}=origin/main", names.front()));
  std::string name = spec.substr(0, eq);
  if (plan.revisions.empty())
    throw Error(Exit::usage, fmt::format("--rev {}: the plan has no revisions:", name),
                "add revisions: {base: main, mine: WORKTREE} to compare code versions (docs/plan.md)");
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw Error(Exit::usage, fmt::format("--rev: the plan has no revision '{}'{}", name, util::suggestion_suffix(name, names)),
                fmt::format("the plan's revisions: {}", fmt::join(names, ", ")));
  if (overrides.count(name)) throw Error(Exit::usage, fmt::format("--rev {} given twice", name));
  overrides[name] = spec.substr(eq + 1);
}

std::vector<Revision> resolve_revisions(const Context& ctx, const std::map<std::string, std::string>& overrides) {
  std::vector<Revision> out;
  std::optional<record::Code> worktree;  // one snapshot for every revision that names the work tree
  const gitstore::PathSet data = data_paths(ctx);  // read once, not once per revision
  for (const auto& [name, planned] : ctx.plan.revisions) {
    Revision r;
    r.name = name;
    auto o = overrides.find(name);
    r.spec = o == overrides.end() ? planned : o->second;
    if (r.spec == kWorktree) {
      if (!worktree) worktree = code_identity(ctx);
      r.code = *worktree;
      if (r.code.unknown())
        throw Error(Exit::environment, fmt::format("revision '{}': the work tree could not be snapshot", name),
                    "see the warning above; commit the change and name its commit instead");
    } else {
      auto commit = ctx.repo.resolve(r.spec);
      constexpr const char* kSpecHint =
          "a branch, tag, commit id or expression such as HEAD~3 (git rev-parse accepts it), or WORKTREE";
      // A spec from --rev is the command line's, not the plan file's.
      if (!commit && o != overrides.end())
        throw Error(Exit::usage, fmt::format("--rev {}={}: '{}' names no commit of this repository", name, r.spec, r.spec), kSpecHint);
      if (!commit)
        throw Error(Exit::usage, Location{ctx.plan_name, 0, 0},
                    fmt::format("revision '{}': '{}' names no commit of this repository", name, r.spec), kSpecHint);
      r.code.commit = *commit;
      r.code.tree = ctx.repo.tree_without(*commit, data);
    }
    r.dir = tree_dir(ctx, r.code.tree);
    out.push_back(std::move(r));
  }
  return out;
}

fs::path tree_dir(const Context& ctx, const std::string& tree) { return ctx.repo.state_dir() / "trees" / tree; }

namespace {

// The key of a build: the code tree and the command that builds it.
std::string build_key(const Revision& rev, const std::string& command) {
  return util::sha256_hex(rev.code.tree + "\n" + command).substr(0, 16);
}

}  // namespace

void prepare_revision(const Context& ctx, const GlobalOptions& g, Revision& rev) {
  const fs::path state = rev.dir / ".abtrack";
  {
    // One abtrack at a time writes and builds a tree; the others then find it done.
    fs::create_directories(rev.dir.parent_path());
    util::FileLock lock(rev.dir.parent_path() / (rev.code.tree + ".lock"));
    std::error_code ec;
    if (!fs::is_directory(rev.dir, ec)) {
      info(g, fmt::format("revision {}: writing its code tree {} ({})", rev.name, rev.code.tree.substr(0, 12),
                          rev.dir.lexically_relative(ctx.repo.workdir()).generic_string()));
      ctx.repo.materialise(rev.code.tree, rev.dir);
    }
    fs::create_directories(state);
    util::write_file_atomic(state / "used", runner::utc_now() + "\n");
    if (util::trim(ctx.plan.build).empty()) return;
    const std::string key = build_key(rev, ctx.plan.build);
    const fs::path ok = state / ("build-" + key + ".ok");
    if (fs::exists(ok, ec)) return;  // built before: the cache
    info(g, fmt::format("revision {}: build: {}", rev.name, ctx.plan.build));
    plan::Plan p = plan_for(ctx.plan, rev);
    p.setup = ctx.plan.build;
    p.timeout_s = ctx.plan.build_timeout_s;
    runner::LocalExecutor executor;
    auto result = runner::run_setup(p, executor, "build");
    const fs::path log = state / ("build-" + key + ".log");
    util::write_file_atomic(log, fmt::format("$ {}\n--- stdout (last {} bytes kept)\n{}\n--- stderr\n{}\n", ctx.plan.build,
                                             result.invocation.stdout_tail.size(), result.invocation.stdout_tail,
                                             result.invocation.stderr_tail));
    rev.built = true;
    if (result.ok) {
      util::write_file_atomic(ok, fmt::format("{:.3f} s\n", result.invocation.duration_s));
      return;
    }
    result.reason = fmt::format("build of revision '{}' ({}) failed: {} (log: {})", rev.name, rev.spec, result.reason,
                                log.lexically_relative(ctx.repo.workdir()).generic_string());
    warn(result.reason + "; its runs are recorded as invalid");
    rev.failed_build = std::move(result);
  }
}

plan::Plan plan_for(const plan::Plan& plan, const Revision& rev) {
  plan::Plan p = plan;
  p.repo_root = rev.dir;
  return p;
}

const Revision* revision_of(const plan::Plan& plan, const std::vector<Revision>& revisions, const plan::Cell& cell) {
  if (plan.revisions.empty()) return nullptr;
  if (!cell.values.empty())
    for (const auto& r : revisions)
      if (r.name == cell.values.front()) return &r;  // `rev` is the first axis
  std::vector<std::string> names;
  for (const auto& r : revisions) names.push_back(r.name);
  throw Error(Exit::usage,
              fmt::format("cell {} names no revision of this invocation", cell.values.empty() ? "(no values)" : plan.label(cell)),
              fmt::format("the revisions resolved: {}", names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
}

std::vector<fs::path> clean_trees(const Context& ctx, const std::vector<std::string>& keep_trees, int keep_recent) {
  std::vector<std::pair<fs::file_time_type, fs::path>> trees;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ctx.repo.state_dir() / "trees", ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.size() != 40 || name.starts_with('.')) continue;
    if (std::find(keep_trees.begin(), keep_trees.end(), name) != keep_trees.end()) continue;
    auto used = fs::last_write_time(e.path() / ".abtrack" / "used", ec);
    if (ec) used = fs::last_write_time(e.path(), ec);
    trees.emplace_back(used, e.path());
  }
  std::sort(trees.begin(), trees.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> removed;
  for (std::size_t i = static_cast<std::size_t>(std::max(keep_recent, 0)); i < trees.size(); ++i) {
    util::FileLock lock(trees[i].second.parent_path() / (trees[i].second.filename().string() + ".lock"));
    fs::remove_all(trees[i].second, ec);
    fs::remove(trees[i].second.parent_path() / (trees[i].second.filename().string() + ".lock"), ec);
    removed.push_back(trees[i].second);
  }
  return removed;
}

}  // namespace abtrack::cli
