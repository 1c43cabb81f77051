#pragma once
// Code versions as an axis (the plan's `revisions:`): each revision resolved to a commit (or a
// snapshot of the work tree), its code tree written once outside the work tree
// (.git/abtrack/trees/<tree>/), and built once per code tree and build command.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"

namespace abtrack::cli {

// The name of the work tree as a revision.
inline constexpr std::string_view kWorktree = "WORKTREE";

// One revision of the plan as resolved for this invocation.
struct Revision {
  std::string name;  // the plan's name for it: the value of the `rev` axis
  std::string spec;  // what it names: "main", "HEAD~3", "WORKTREE", ...
  record::Code code; // the commit (and for WORKTREE the snapshot) and the content identity
  std::filesystem::path dir;  // where its code tree is written and its commands run
  // The build's result when it failed (the runs of this revision are invalid with it).
  std::optional<runner::SetupResult> failed_build;
  bool built = false;  // built by this invocation (false: the cached build was used)
};

// Parses `--rev NAME=REVISION` overrides. Throws Error(usage) naming what is wrong.
void add_revision_override(const plan::Plan& plan, const std::string& spec, std::map<std::string, std::string>& overrides);

// Resolves every revision of the plan (the overrides replacing theirs). Throws Error(usage)
// for a revision that names no commit, before anything runs.
std::vector<Revision> resolve_revisions(const Context& ctx, const std::map<std::string, std::string>& overrides);

// The folder of a code tree under .git/abtrack/trees/.
std::filesystem::path tree_dir(const Context& ctx, const std::string& tree);

// Writes the revision's code tree (once: an existing folder is reused) and runs the plan's
// `build` in it unless a build of this tree with this command succeeded before. A failing
// build is kept in `failed_build` with its log under <tree>/.abtrack/; it does not throw.
// Throws Interrupted on SIGINT/SIGTERM.
void prepare_revision(const Context& ctx, const GlobalOptions& g, Revision& rev);

// The plan as the revision's commands see it: rooted at the revision's code tree.
plan::Plan plan_for(const plan::Plan& plan, const Revision& rev);

// The revision of a cell (its `rev` value): never null for a plan with revisions, so callers
// may dereference it there; nullptr only for a plan without revisions (its cells run in the work
// tree). Throws Error(usage) when the cell's revision is not among `revisions` (a cell of
// another plan, or a list that left it out), instead of returning null.
const Revision* revision_of(const plan::Plan& plan, const std::vector<Revision>& revisions, const plan::Cell& cell);

// Removes the code trees under .git/abtrack/trees/ that `keep_trees` does not name, except the
// `keep_recent` most recently used. Returns the folders removed.
std::vector<std::filesystem::path> clean_trees(const Context& ctx, const std::vector<std::string>& keep_trees, int keep_recent);

}  // namespace abtrack::cli
