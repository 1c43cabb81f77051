#include "experiment/revisions.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiment/code_identity.hpp"
#include "util/files.hpp"
#include "util/lock.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::experiment {
namespace fs = std::filesystem;

void add_revision_override(const plan::Plan& plan, const std::string& spec,
                           std::map<std::string, std::string>& overrides) {
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
    throw Error(Exit::usage,
                fmt::format("--rev: the plan has no revision '{}'{}", name, util::suggestion_suffix(name, names)),
                fmt::format("the plan's revisions: {}", fmt::join(names, ", ")));
  if (overrides.count(name)) throw Error(Exit::usage, fmt::format("--rev {} given twice", name));
  overrides[name] = spec.substr(eq + 1);
}

std::vector<Revision> resolve_revisions(const Context& ctx, Progress& progress,
                                        const std::map<std::string, std::string>& overrides) {
  std::vector<Revision> out;
  std::optional<record::Code> worktree;            // one snapshot for every revision that names the work tree
  const gitstore::PathSet data = data_paths(ctx);  // read once, not once per revision
  for (const auto& [name, planned] : ctx.plan.revisions) {
    Revision r;
    r.name = name;
    auto o = overrides.find(name);
    r.spec = o == overrides.end() ? planned : o->second;
    if (r.spec == kWorktree) {
      if (!worktree) worktree = code_identity(ctx, progress);
      r.code = *worktree;
      if (r.code.unknown())
        throw Error(Exit::environment, fmt::format("revision '{}': the work tree could not be snapshot", name),
                    "see the warning above; commit the change and name its commit instead");
    } else {
      // Against the user's history: abtrack's own commits (Abtrack-Experiment) are passed over,
      // so HEAD~1 means the same commit however many runs were committed since.
      auto commit = ctx.repo.resolve_in_user_history(r.spec, "Abtrack-Experiment");
      constexpr const char* kSpecHint =
          "a branch, tag, commit id or expression such as HEAD~3 (git rev-parse accepts it), or WORKTREE";
      // A spec from --rev is the command line's, not the plan file's.
      if (!commit && o != overrides.end())
        throw Error(Exit::usage,
                    fmt::format("--rev {}={}: '{}' names no commit of this repository", name, r.spec, r.spec),
                    kSpecHint);
      if (!commit)
        throw Error(Exit::usage, Location{ctx.plan_name, 0, 0},
                    fmt::format("revision '{}': '{}' names no commit of this repository", name, r.spec), kSpecHint);
      r.code.commit = *commit;
      r.code.tree = ctx.repo.tree_without(*commit, data);
    }
    r.code.revision = r.spec;
    r.key = tree_key(r.code.tree, ctx.plan.build);
    r.dir = ctx.repo.state_dir() / "trees" / r.key / "code";
    out.push_back(std::move(r));
  }
  return out;
}

std::string tree_key(const std::string& tree, const std::string& build) {
  return fmt::format("{}-{}", tree.substr(0, 12), util::sha256_hex(tree + "\n" + build).substr(0, 8));
}

namespace {

constexpr std::string_view kBuildIdVariable = "ABTRACK_BUILD_ID";

// The work tree's name in .git/worktrees/.
std::string worktree_name(const std::string& key) { return "abtrack-" + key; }

std::string relative(const Context& ctx, const fs::path& p) {
  return p.lexically_relative(ctx.repo.workdir()).generic_string();
}

// The processes of group `group` that have not exited (zombies left out), and whether one of
// them carries `ABTRACK_BUILD_ID=<id>` in its environment: the group is still the build that id
// names, not another that reuses the number.
struct GroupMembers {
  int live = 0;
  bool marked = false;
};

GroupMembers group_members(pid_t group, const std::string& id) {
  GroupMembers m;
  const std::string needle = fmt::format("{}={}", kBuildIdVariable, id);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto read_stat = util::try_read_file(e.path() / "stat");  // gone meanwhile: not a member
    if (!read_stat) continue;
    const std::string stat = std::move(read_stat).value();
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so from the last ')'.
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0;
    if (!(fields >> state >> ppid >> pgrp) || pgrp != group || state == "Z" || state == "X") continue;
    ++m.live;
    if (m.marked) continue;
    auto read_env = util::try_read_file(e.path() / "environ");
    if (!read_env) continue;
    const std::string env = std::move(read_env).value();
    for (std::size_t at = 0; at < env.size() && !m.marked;) {
      auto end = env.find('\0', at);
      if (end == std::string::npos) end = env.size();
      m.marked = std::string_view(env).substr(at, end - at) == needle;
      at = end + 1;
    }
  }
  return m;
}

// Stops the build that an abtrack killed outright left running in the tree at `root` (its
// process group and id are in <root>/build.pid while a build runs). Called with the tree's
// build lock held: no live abtrack is building there, so a build still running is an orphan.
void stop_orphan_build(const fs::path& root, Progress& progress) {
  const fs::path file = root / "build.pid";
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  std::istringstream in(util::read_file(file));
  long group = 0;
  std::string id;
  if (in >> group >> id && group > 1 && group_members(static_cast<pid_t>(group), id).marked) {
    ::kill(static_cast<pid_t>(-group), SIGKILL);
    for (int i = 0; i < 500 && group_members(static_cast<pid_t>(group), id).live > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    progress.warn(fmt::format("stopped a build that a killed abtrack left running in {} (process group {})",
                              root.string(), group));
  }
  fs::remove(file, ec);
}

// Removes the .partial-<name>-<pid> folders (written by abtrack before trees were work trees)
// whose writer is gone. Returns those it could not remove, with why.
std::vector<std::pair<fs::path, std::string>> remove_partials(const fs::path& trees, std::vector<fs::path>* removed) {
  std::vector<std::pair<fs::path, std::string>> failed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(trees, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(".partial-")) continue;
    auto dash = name.rfind('-');
    long pid = 0;  // stays 0 when the name holds no number
    std::from_chars(name.data() + dash + 1, name.data() + name.size(), pid);
    if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) continue;  // its writer may be at work
    std::error_code rec;
    fs::remove_all(e.path(), rec);
    if (rec) failed.emplace_back(e.path(), rec.message());
    else if (removed) removed->push_back(e.path());
  }
  return failed;
}

// Runs the build as run_setup does, with the shell's process group recorded in `pid_file`
// (and the build's processes marked with ABTRACK_BUILD_ID) while it runs.
class BuildExecutor final : public runner::Executor {
 public:
  BuildExecutor(fs::path pid_file, std::string id, Progress& progress)
      : m_pid_file(std::move(pid_file)), m_id(std::move(id)), m_progress(progress) {}
  util::ProcessResult execute(const util::ProcessSpec& spec) override {
    util::ProcessSpec s = spec;
    s.env.emplace_back(std::string(kBuildIdVariable), m_id);
    s.on_start = [this](int pid) {
      if (auto w =
              util::try_write_file_atomic(m_pid_file, fmt::format("{} {}\n", pid, m_id), util::Durability::ordinary);
          !w)
        m_progress.warn(w.error());
    };
    auto r = util::run_process(s);
    std::error_code ec;
    fs::remove(m_pid_file, ec);
    return r;
  }

 private:
  fs::path m_pid_file;
  std::string m_id;
  Progress& m_progress;
};

// The commit a revision's work tree checks out: the snapshot of the work tree, else the commit.
const std::string& commit_of(const record::Code& code) { return code.snapshot.empty() ? code.commit : code.snapshot; }

// The first absolute path in a command that lies outside the repository ("/home/me/harness.sh"),
// if any: what it reads can change without the code tree changing.
std::optional<std::string> path_outside(const Context& ctx, const std::string& command) {
  for (auto word : util::split(command, ' ')) {
    std::string w(util::trim(word));
    while (!w.empty() && (w.front() == '\'' || w.front() == '"')) w.erase(0, 1);
    while (!w.empty() && (w.back() == '\'' || w.back() == '"' || w.back() == ';')) w.pop_back();
    if (!w.starts_with('/')) continue;
    auto rel = fs::path(w).lexically_normal().lexically_relative(ctx.repo.workdir()).generic_string();
    if (rel.empty() || rel.starts_with("..")) return w;
  }
  return std::nullopt;
}

// The compilers on the build's PATH, one line each ("cc: gcc (Debian 12.2.0-14) 12.2.0"): what a
// build that names no other compiler uses. Empty when none answers.
std::vector<std::string> probe_toolchain(const plan::Plan& plan, const fs::path& dir, Progress& progress) {
  util::ProcessSpec spec;
  spec.shell_command =
      "for c in cc c++ nvcc; do command -v \"$c\" >/dev/null 2>&1 || continue; "
      "v=$(\"$c\" --version 2>/dev/null | grep -m1 -i -E 'release|[0-9]+[.][0-9]+'); [ -n \"$v\" ] && echo \"$c: $v\"; done; true";
  spec.workdir = dir;
  spec.env = plan.env;
  spec.timeout_s = 30;
  std::vector<std::string> out;
  try {
    auto r = util::run_process(spec);
    for (auto line : util::split(r.out, '\n'))
      if (!util::trim(line).empty()) out.emplace_back(util::trim(line));
  } catch (const Error& e) {
    progress.warn("could not ask the build's compilers for their versions: " + e.diagnostics().front().message);
  }
  return out;
}

// A build as build.json keeps it beside the tree (nullopt when missing or unreadable: a tree
// built before it existed).
std::optional<record::Build> read_build(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  return record::parse_build(util::read_file(file));
}

}  // namespace

void prepare_revision(const Context& ctx, Progress& progress, Revision& rev, bool rebuild) {
  const fs::path trees = ctx.repo.state_dir() / "trees";
  const fs::path root = trees / rev.key;
  fs::create_directories(trees);
  // In use from here on (clean leaves it alone), for as long as the revision lives.
  if (!rev.in_use)
    rev.in_use = std::make_shared<util::FileLock>(trees / (rev.key + ".lock"), std::nullopt, util::LockMode::shared);
  // One abtrack at a time writes and builds a tree; the others then find it done.
  util::FileLock building(trees / (rev.key + ".build.lock"));
  stop_orphan_build(root, progress);
  for (const auto& [path, why] : remove_partials(trees, nullptr))
    progress.warn(fmt::format("cannot remove {}: {}", path.string(), why));
  const std::string& commit = commit_of(rev.code);
  if (commit.empty())
    throw Error(Exit::usage,
                fmt::format("revision '{}' ({}): the branch has no commit yet, so there is no code to check out",
                            rev.name, rev.spec),
                "commit the code first");
  std::error_code ec;
  std::optional<std::string> head;
  if (fs::exists(root / "ready", ec)) head = ctx.repo.worktree_head(rev.dir);
  if (!head) {
    // Absent, or left incomplete by an abtrack killed while writing it: made whole again.
    if (fs::exists(root, ec)) {
      progress.info(
          fmt::format("revision {}: {} was left incomplete; writing it again", rev.name, relative(ctx, root)));
      fs::remove_all(root, ec);
      if (ec) throw Error(Exit::environment, fmt::format("cannot remove {}: {}", root.string(), ec.message()));
    }
    progress.info(fmt::format("revision {}: checking out {} as a work tree ({})", rev.name, commit.substr(0, 12),
                              relative(ctx, rev.dir)));
    fs::create_directories(root);
    std::vector<std::string> missing;
    try {
      missing = ctx.repo.add_worktree(worktree_name(rev.key), rev.dir, commit);
    } catch (Error& e) {
      fs::remove_all(root, ec);
      try {
        ctx.repo.prune_worktree(worktree_name(rev.key));
      } catch (const Error&) {
        // The checkout's own error is the one to report; a stale entry is pruned next time.
      }
      e.context(fmt::format("revision '{}' ({})", rev.name, rev.spec));
      throw;
    }
    if (!missing.empty())
      progress.warn(
          fmt::format("revision {}: {} Git LFS file{} without content in .git/lfs/objects stay pointers: {}{}",
                      rev.name, missing.size(), missing.size() == 1 ? "" : "s",
                      fmt::join(missing.begin(), missing.begin() + std::min<std::size_t>(missing.size(), 5), ", "),
                      missing.size() > 5 ? ", ..." : ""));
    util::write_file_atomic(root / "ready", commit + "\n", util::Durability::ordinary);
  } else if (*head != commit) {
    // Another commit with the same code (it differs in abtrack's data): HEAD tells the truth.
    ctx.repo.move_worktree(rev.dir, commit);
    util::write_file_atomic(root / "ready", commit + "\n", util::Durability::ordinary);
  }
  util::write_file_atomic(root / "used", runner::utc_now() + "\n", util::Durability::ordinary);
  auto check_workdir = [&](bool after_build) {
    if (ctx.plan.workdir.empty() || fs::is_directory(rev.dir / ctx.plan.workdir, ec)) return;
    runner::SetupResult missing;
    missing.invocation.command = ctx.plan.build;
    missing.reason = fmt::format("revision '{}' ({}) has no folder '{}' (workdir:) in its tree{}", rev.name, rev.spec,
                                 ctx.plan.workdir, after_build ? " after its build" : "");
    progress.warn(missing.reason + "; its runs are recorded as invalid");
    rev.failed_build = std::move(missing);
  };
  if (util::trim(ctx.plan.build).empty()) return check_workdir(false);
  const fs::path ok = root / "build.ok";
  if (!rebuild && fs::exists(ok, ec)) {  // built before: the cache
    rev.build = read_build(root / "build.json");
    if (auto outside = path_outside(ctx, ctx.plan.build))
      progress.info(
          fmt::format("revision {}: the cached build is used; the build names {}, outside the repository, which is not "
                      "part of what builds are cached by (--rebuild builds again)",
                      rev.name, *outside));
    return check_workdir(true);
  }
  progress.info(fmt::format("revision {}: build: {}", rev.name, ctx.plan.build));
  plan::Plan p = plan_for(ctx.plan, rev);
  p.workdir.clear();  // the build runs at the tree's root
  p.setup = ctx.plan.build;
  p.timeout_s = ctx.plan.build_timeout_s;
  BuildExecutor executor(root / "build.pid", runner::new_measurement_id().substr(0, 16), progress);
  auto result = runner::run_setup(p, executor, "build");
  const fs::path log = root / "build.log";
  util::write_file_atomic(log, fmt::format("$ {}\n--- stdout (last {} bytes kept)\n{}\n--- stderr\n{}\n",
                                           ctx.plan.build, result.invocation.stdout_tail.size(),
                                           result.invocation.stdout_tail, result.invocation.stderr_tail));
  rev.built = true;
  if (result.ok) {
    record::Build b{ctx.plan.build, result.invocation.duration_s, runner::utc_now(), relative(ctx, log),
                    probe_toolchain(p, rev.dir, progress)};
    util::write_file_atomic(root / "build.json", record::build_to_json(b));
    rev.build = std::move(b);
    util::write_file_atomic(ok, fmt::format("{:.3f} s\n", result.invocation.duration_s));
    return check_workdir(true);
  }
  result.reason = fmt::format("build of revision '{}' ({}) failed: {} (log: {})", rev.name, rev.spec, result.reason,
                              relative(ctx, log));
  progress.warn(result.reason + "; its runs are recorded as invalid");
  rev.failed_build = std::move(result);
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
  throw Error(
      Exit::usage,
      fmt::format("cell {} names no revision of this invocation",
                  cell.values.empty() ? "(no values)" : plan.label(cell)),
      fmt::format("the revisions resolved: {}", names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
}

CleanReport clean_trees(const Context& ctx, Progress& progress, const std::vector<std::string>& keep_keys,
                        int keep_recent) {
  CleanReport report;
  const fs::path trees = ctx.repo.state_dir() / "trees";
  report.failed = remove_partials(trees, &report.removed);
  std::vector<std::pair<fs::file_time_type, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(trees, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory(ec) || name.starts_with('.')) continue;
    if (std::find(keep_keys.begin(), keep_keys.end(), name) != keep_keys.end()) continue;
    auto used = fs::last_write_time(e.path() / "used", ec);
    if (ec) used = fs::last_write_time(e.path(), ec);
    found.emplace_back(used, e.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = static_cast<std::size_t>(std::max(keep_recent, 0)); i < found.size(); ++i) {
    const fs::path& root = found[i].second;
    const std::string key = root.filename().string();
    // Not while a run uses it, nor while one writes or builds it.
    auto unused = util::FileLock::try_lock(trees / (key + ".lock"));
    auto idle = unused ? util::FileLock::try_lock(trees / (key + ".build.lock")) : nullptr;
    if (!idle) {
      report.in_use.push_back(root);
      continue;
    }
    stop_orphan_build(root, progress);
    fs::remove_all(root, ec);
    if (ec) {
      report.failed.emplace_back(root, ec.message());
      continue;
    }
    try {
      ctx.repo.prune_worktree(worktree_name(key));
    } catch (const Error& e) {
      report.failed.emplace_back(root, e.diagnostics().front().message);
      continue;
    }
    fs::remove(trees / (key + ".lock"), ec);  // safe while held: FileLock
    fs::remove(trees / (key + ".build.lock"), ec);
    report.removed.push_back(root);
  }
  // Lock files of trees that are gone (and nobody holds).
  for (const auto& e : fs::directory_iterator(trees, ec)) {
    std::string name = e.path().filename().string();
    if (!name.ends_with(".lock")) continue;
    std::string key = name.substr(0, name.size() - 5);
    if (key.ends_with(".build")) key.resize(key.size() - 6);
    if (fs::exists(trees / key, ec)) continue;
    if (auto held = util::FileLock::try_lock(e.path())) fs::remove(e.path(), ec);
  }
  return report;
}

}  // namespace abtrack::experiment
