#pragma once
// What gitstore's own sources share (git_util.cpp): libgit2's start-up, object ids, HEAD, the
// configuration, signatures, status flags and retries. Not part of gitstore's interface.
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <git2.h>

#include "gitstore/handles.hpp"
#include "gitstore/repository.hpp"
#include "util/error.hpp"
#include "util/expected.hpp"

namespace abtrack::gitstore {

// Initialises libgit2 once per process (and shuts it down at exit), with the options a step needs.
void ensure_init();

// libgit2's last error message, or a placeholder when it has none.
std::string last_git_message();
// An object id as 40 hex digits, and back (throws Error(environment) on malformed text).
std::string hex(const git_oid& oid);
git_oid parse_oid(const std::string& hex);

// HEAD's ref name ("refs/heads/main", or "HEAD" when detached) and its current target.
struct Tip {
  std::string ref;
  std::optional<git_oid> oid;
};
Tip read_tip(git_repository* repo);
// The tree of a commit (caller frees); nullptr for nullopt (an unborn branch). try_tree_of says
// why a commit has none (one this repository does not have); tree_of throws that as an Error.
Expected<git_tree*> try_tree_of(git_repository* repo, const std::optional<git_oid>& commit_id);
git_tree* tree_of(git_repository* repo, const std::optional<git_oid>& commit_id);
// A libgit2 return code as a value: a failure "WHAT: libgit2's message" when it is negative
// (check_git throws that failure).
Expected<> git_result(int rc, const std::string& what);

// Gives the repository one snapshot of its configuration, read from memory from then on.
void freeze_config(git_repository* repo);
// A configuration value from a snapshot: false / nullopt when unset or unreadable.
bool config_bool(git_repository* repo, const char* key);
std::optional<std::string> config_string(git_repository* repo, const char* key);
// The signature of `who` ("AUTHOR" or "COMMITTER"): GIT_<who>_NAME/_EMAIL first, then user.name
// and user.email. Caller frees. Throws Error(environment) naming what is missing.
git_signature* make_signature(git_repository* repo, const char* who);

// Sleeps a jittered, growing time before attempt `attempt + 1` of something contended.
void backoff(int attempt);

// The status flags that mean "changed" (not ignored, not current), and git's short status for them.
constexpr unsigned kChanged = ~static_cast<unsigned>(GIT_STATUS_IGNORED) & ~static_cast<unsigned>(GIT_STATUS_CURRENT);
std::string short_status(unsigned flags);
// Whether `path` is one of `paths` or lies in one of its folders (entries ending in '/').
bool in_path_set(const PathSet& paths, std::string_view path);
// Runs a libgit2 scan of the work tree again (a few times) while it fails because a file changed
// under it; other errors, and success, are returned at once.
int retry_while_files_change(const std::function<int()>& scan);

// The Error for an index libgit2 cannot read (split, damaged, ...), with what to do about it.
Error index_error(git_repository* repo);

}  // namespace abtrack::gitstore
