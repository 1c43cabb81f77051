#pragma once
// Code versions as an axis (the plan's `revisions:`): each revision resolved to a commit (or a
// snapshot of the work tree), checked out as a linked work tree of that commit under
// .git/abtrack/trees/<key>/code/ (one per code tree and build command: the key), and built
// there once.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiment/context.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"
#include "util/lock.hpp"

namespace abtrack::experiment {

// The name of the work tree as a revision.
inline constexpr std::string_view kWorktree = "WORKTREE";

// One revision of the plan as resolved for this invocation.
struct Revision {
  std::string name;   // the plan's name for it: the value of the `rev` axis
  std::string spec;   // what it names: "main", "HEAD~3", "WORKTREE", ...
  record::Code code;  // the commit (and for WORKTREE the snapshot) and the content identity
  // Its folder under .git/abtrack/trees/: one per code tree and build command (tree_key).
  std::string key;
  std::filesystem::path dir;  // its linked work tree (<key>/code): where it builds and its commands run
  // The build's result when it failed, or the revision's tree lacks the plan's workdir (the
  // runs of this revision are invalid with it).
  std::optional<runner::SetupResult> failed_build;
  bool built = false;                  // built by this invocation (false: the cached build was used)
  std::optional<record::Build> build;  // the successful build its runs measure (none: no build:)
  // Taken by prepare_revision and held (shared) for as long as this Revision or a copy lives:
  // `abtrack clean` leaves a tree in use alone.
  std::shared_ptr<util::FileLock> in_use;
};

// Parses `--rev NAME=REVISION` overrides. Throws Error(usage) naming what is wrong.
void add_revision_override(const plan::Plan& plan, const std::string& spec,
                           std::map<std::string, std::string>& overrides);

// Resolves every revision of the plan (the overrides replacing theirs). Throws Error(usage)
// for a revision that names no commit, before anything runs. `progress`: for the work tree's
// snapshot (code_identity).
std::vector<Revision> resolve_revisions(const Context& ctx, Progress& progress,
                                        const std::map<std::string, std::string>& overrides);

// The folder name under .git/abtrack/trees/ of a code tree built by `build` (the command as the
// plan gives it): a changed command builds in a folder of its own, and going back to the old
// one finds its outputs again.
std::string tree_key(const std::string& tree, const std::string& build);

// Makes the revision's tree ready and takes `in_use`: checks out its commit as a linked work
// tree (once: an existing one is reused, its HEAD moved to this commit when another commit with
// the same code made it; one left incomplete by a killed abtrack is made again), and runs the
// plan's `build` in it unless a build with this command succeeded there before. A build that
// a killed abtrack left running is stopped first. A failing build (or a workdir: missing from
// the revision's tree) is kept in `failed_build` with its log under <key>/; it does not throw.
// Throws Error(environment) for a tree it cannot make (a submodule no local copy provides),
// Interrupted on SIGINT/SIGTERM. `rebuild`: build again even when a build succeeded before
// (what the cache key cannot see changed: a harness or library outside the repository). What it
// does (checking out, building) is info to `progress`, a failing build a warning.
void prepare_revision(const Context& ctx, Progress& progress, Revision& rev, bool rebuild = false);

// The plan as the revision's commands see it: rooted at the revision's code tree.
plan::Plan plan_for(const plan::Plan& plan, const Revision& rev);

// The revision of a cell (its `rev` value): never null for a plan with revisions, so callers
// may dereference it there; nullptr only for a plan without revisions (its cells run in the work
// tree). Throws Error(usage) when the cell's revision is not among `revisions` (a cell of
// another plan, or a list that left it out), instead of returning null.
const Revision* revision_of(const plan::Plan& plan, const std::vector<Revision>& revisions, const plan::Cell& cell);

// What clean_trees did.
struct CleanReport {
  std::vector<std::filesystem::path> removed;
  std::vector<std::filesystem::path> in_use;                          // held by a running abtrack: left alone
  std::vector<std::pair<std::filesystem::path, std::string>> failed;  // and why
};

// Removes the trees under .git/abtrack/trees/ whose keys `keep_keys` does not name, except the
// `keep_recent` most recently used and those in use, with their work-tree registrations in
// .git/worktrees/; and what killed writes left there. A build a killed abtrack left running in
// a removed tree is stopped, with a warning to `progress`.
CleanReport clean_trees(const Context& ctx, Progress& progress, const std::vector<std::string>& keep_keys,
                        int keep_recent);

}  // namespace abtrack::experiment
