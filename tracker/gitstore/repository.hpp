#pragma once
// Everything abtrack does with git, through libgit2 (the only user of it). Knows nothing of
// plans: it commits files on HEAD with compare-and-swap, snapshots the work tree, reads trees
// and history.
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct git_repository;
struct git_tree;
struct git_index;

namespace abtrack::gitstore {

// A file in a folder of a tree. The id is kept inline (no allocation: a step lists a folder of
// thousands of records).
struct Entry {
  std::string name;                // file name within the folder
  std::array<char, 40> oid_hex{};  // blob id, 40 hex digits
  std::string_view oid() const { return {oid_hex.data(), oid_hex.size()}; }
};

// Read access to the tree of one commit (or to nothing, on an unborn branch).
class TreeView {
 public:
  TreeView(git_repository* repo, git_tree* tree, std::optional<std::string> commit)
      : m_repo(repo), m_tree(tree), m_commit(std::move(commit)) {}
  // The commit this view shows, nullopt on an unborn branch.
  const std::optional<std::string>& commit() const { return m_commit; }
  // The blobs directly inside `dir` ("runs/occ"), sorted by name; empty when there is none.
  std::vector<Entry> list(const std::string& dir) const;
  // The content of the file at `path`, nullopt when absent.
  std::optional<std::string> read(const std::string& path) const;
  // The content of a blob. Throws Error(environment).
  std::string read_blob(std::string_view oid) const;
  // The names of the folders directly inside `dir` ("runs"), sorted; empty when there is none.
  std::vector<std::string> folders(const std::string& dir) const;

 private:
  git_repository* m_repo;
  git_tree* m_tree;  // nullptr: empty
  std::optional<std::string> m_commit;
  // The tree of the folder `dir`, nullptr when there is none; looked up once per view.
  const git_tree* folder(const std::string& dir) const;
  mutable std::vector<std::pair<std::string, std::shared_ptr<git_tree>>> m_folders;
};

// What one commit adds: files (repo-relative path -> content) and its message.
struct Change {
  bool skip = false;  // the builder found nothing to commit (e.g. it is already in the tip)
  std::string message;
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::pair<std::string, std::string>> refs;  // refs to point at ids once committed
  std::vector<std::string> removals;                      // files of the tip it removes (repo-relative paths)
};

struct Committed {
  std::string commit;                   // the new commit's id
  std::vector<std::string> kept_edits;  // paths whose work-tree edits were kept (not overwritten)
  int attempts = 1;                     // compare-and-swap attempts it took
};

// One entry of the history: a commit with its trailers.
struct HistoryEntry {
  std::string commit;
  std::string first_parent;  // "" for a root commit
  std::int64_t time = 0;     // committer time, seconds since the epoch
  std::string subject;
  std::vector<std::pair<std::string, std::string>> trailers;
  // The value of the first trailer `key`, or "".
  std::string trailer(std::string_view key) const;
};

// A work-tree path that differs from HEAD, with git's short status ("M ", " M", "??", ...).
struct PathStatus {
  std::string path;
  std::string code;
};

// An untracked (not ignored) file of the work tree and the stat data that tell its versions apart.
struct UntrackedFile {
  std::string path;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const UntrackedFile&) const = default;
};

// Paths a status walk passes over (files, or folders ending in '/'): the outputs of commands.
using PathSet = std::vector<std::string>;

class Repository {
 public:
  // Finds the repository containing `start` (like git does from a subdirectory) and opens it.
  // Throws Error(environment) with a clear message: not a repository, bare, owned by another
  // user, unsupported extension.
  static Repository discover(const std::filesystem::path& start);
  Repository(Repository&&) noexcept;
  Repository& operator=(Repository&&) noexcept;
  ~Repository();

  // The absolute work-tree root (no trailing slash).
  const std::filesystem::path& workdir() const { return m_workdir; }
  // HEAD's commit id, nullopt on an unborn branch.
  std::optional<std::string> head() const;
  // Whether HEAD's history holds `commit` (HEAD itself or an ancestor); false for an unborn
  // HEAD or a commit this repository does not have.
  bool head_contains(const std::string& commit) const;
  // Whether HEAD points straight at a commit instead of at a branch.
  bool head_detached() const;
  // Whether commits `a` and `b` hold the same files, apart from the paths in `data` (files or
  // folders, repo-relative): false when either is missing.
  bool same_tree_except(const std::string& a, const std::string& b, const std::vector<std::string>& data) const;
  // Whether `ref` exists and points at a commit other than `target`.
  bool ref_points_elsewhere(const std::string& ref, const std::string& target) const;
  // A work-tree file's text as the repository holds it (line endings converted back, as
  // `git add` would: core.autocrlf, eol attributes), and the atomic write of a repository text as
  // a checkout writes it. abtrack compares and renders in the repository's form.
  std::string read_work_tree(const std::string& path) const;
  void write_work_tree(const std::string& path, const std::string& content) const;
  // Calls `fn` with a view of HEAD's tree.
  template <class Fn>
  auto with_head(Fn&& fn) const;

  // Paths among `paths` (files, or folders ending in '/') that differ from HEAD in the
  // index or the work tree, or are untracked (not ignored).
  std::vector<PathStatus> status(const std::vector<std::string>& paths) const;
  // One walk of the work tree, taken while no abtrack process is committing (the commit lock
  // is held for it, so another abtrack's half-synced files never look like the user's edits):
  // the changes among `watched` (files), and whether anything else differs from HEAD (tracked
  // or untracked, not ignored). The top-level folders in `leave_out` ("runs") are neither
  // walked nor counted, so the walk costs the same however many files they hold.
  struct Scan {
    std::vector<PathStatus> watched;
    bool other_changes = false;
  };
  // Changes to paths in `pass_over` count as neither.
  Scan settled_scan(const std::vector<std::string>& watched, const std::vector<std::string>& leave_out,
                    const PathSet& pass_over = {}) const;
  // Whether the work tree has any change against HEAD (tracked or untracked, not ignored)
  // outside the top-level folders in `leave_out` and the paths in `pass_over`.
  bool dirty(const std::vector<std::string>& leave_out, const PathSet& pass_over = {}) const;
  // The untracked, not ignored files of the work tree outside the top-level folders in
  // `leave_out`, sorted by path: what a command created is what appears between two calls.
  std::vector<UntrackedFile> untracked(const std::vector<std::string>& leave_out) const;
  // Commits the whole work tree (tracked and untracked, not ignored; like `git stash create
  // -u`) with `parent` as its parent and the parent's time as its time, without touching the
  // index, work tree or any ref. The paths in `keep` (files, or folders ending in '/': abtrack's
  // data and the commands' outputs) are as in `parent` (absent without one), so the snapshot
  // differs from its parent only in code; their work-tree files are never read. The same work
  // tree and parent always give the same id. Returns its id.
  std::string snapshot(const std::string& message, const std::optional<std::string>& parent, const PathSet& keep) const;
  // The content identity of a version of the code: the id of the tree of `commit` (the empty
  // tree for nullopt) without the paths in `data` (files or folders, repo-relative; those the
  // tree does not have are passed over). Two commits that differ only in data have one identity.
  // Writes the (few, small) trees it makes to the object database. Throws Error(environment).
  std::string tree_without(const std::optional<std::string>& commit, const std::vector<std::string>& data) const;
  // The commit `spec` names (a branch, tag, commit id or prefix, HEAD~3, origin/main, ...), as
  // 40 hex digits; nullopt when it names no commit.
  std::optional<std::string> resolve(const std::string& spec) const;
  // The same over the user's history: the commits with a trailer `own` (abtrack's: they change
  // only its data) are passed over, so "HEAD~1" is the user's commit before the one HEAD's code
  // came from however many run commits lie between, and "main" its newest commit of the user's.
  // Relative steps (~N, ^N) follow the first-parent chain of the user's commits; a spec with
  // other syntax (^{...}, @{...}, :path) is resolved as git would. nullopt: names no commit.
  std::optional<std::string> resolve_in_user_history(const std::string& spec, std::string_view own) const;
  // The first-parent history from `bad` back to (not including) `good`, oldest first; nullopt
  // when `good` is not a first-parent ancestor of `bad`. Throws Error(environment).
  std::optional<std::vector<std::string>> first_parent_path(const std::string& good, const std::string& bad) const;
  // The subject line of a commit ("" when unknown).
  std::string subject(const std::string& commit) const;
  // Linked work trees (git worktree) for the code of a revision, where `git` works as in any
  // checkout of the commit. gitstore/worktree.cpp.
  //
  // Adds a linked work tree at `dir` (absent; its parent exists), registered as `name` in the
  // repository's worktrees/ folder, with its HEAD detached at `commit` and the commit's files
  // checked out as git checks them out (its own index; the repository's index, work tree and
  // refs are not touched, and no branch is left). Submodules are cloned from a copy this
  // repository has (.git/modules/<name>, the submodule's folder in the work tree, or a URL that
  // is a local path) and checked out at the commit's gitlink, recursively; one that no local
  // copy holds is an Error(environment) naming it. A Git LFS pointer file whose content is in
  // the repository's lfs/objects/ gets that content (git sees the file unchanged); the paths
  // of pointers whose content is missing are returned. A leftover registration `name` (of a
  // work tree whose folder is gone) is replaced. Throws Error(environment).
  std::vector<std::string> add_worktree(const std::string& name, const std::filesystem::path& dir,
                                        const std::string& commit) const;
  // The commit a linked work tree's HEAD names, nullopt when `dir` is none (or is broken).
  std::optional<std::string> worktree_head(const std::filesystem::path& dir) const;
  // Moves a linked work tree's detached HEAD to `commit`, updating the files that differ
  // between the two commits; untracked files (build outputs) and edited files stay. Throws
  // Error(environment).
  void move_worktree(const std::filesystem::path& dir, const std::string& commit) const;
  // Removes the registration `name` from the repository's worktrees/ folder (after its folder
  // was removed); none is fine. Throws Error(environment) when it cannot.
  void prune_worktree(const std::string& name) const;

  // HEAD's commit with its trailers, nullopt on an unborn branch.
  std::optional<HistoryEntry> head_entry() const;
  // The commit `commit` (40 hex digits) with its trailers and first parent, nullopt when this
  // repository does not have it.
  std::optional<HistoryEntry> entry(const std::string& commit) const;

  // Commits on the branch HEAD points to (or detached HEAD): `build` gets a view of the tip
  // and returns the change; the tree is HEAD's tree plus the files (never the index). When
  // the tip moved meanwhile (another writer) it rebuilds on the new tip and retries with
  // jittered backoff. Afterwards the index and work tree are updated for exactly those paths;
  // a work-tree file edited during the run is left as the user has it (see kept_edits).
  // Throws Error(environment) when it cannot commit (no identity, stale lock named, ...).
  Committed commit(const std::function<Change(const TreeView&)>& build);

  // The commits reachable from HEAD, newest first, that have a trailer `key` (all when empty).
  std::vector<HistoryEntry> history(const std::string& key = {}) const;

  // Checks that a committer identity is configured. Throws Error(environment) naming user.name.
  void check_identity() const;

  // The folder where abtrack keeps its own state (.git/abtrack), created on demand.
  std::filesystem::path state_dir() const;

 private:
  explicit Repository(git_repository* repo);
  // HEAD's tree (caller frees; nullptr when unborn), and in `commit` the commit it is the tree
  // of: both from one read of HEAD, so they agree however HEAD moves meanwhile.
  git_tree* head_tree(std::optional<std::string>& commit) const;
  // Makes the index and work tree agree with a new commit for `files` (path, content), given
  // the tree they agreed with before; a file that matches neither is the user's and is kept
  // (appended to `kept_edits`).
  void sync_checkout(git_tree* before, const std::vector<std::pair<std::string, std::string>>& files,
                     const std::string& commit, std::vector<std::string>& kept_edits) const;
  // The same for files a commit removed: a work-tree file still as in `before` is deleted (an
  // edited one is the user's and is kept, in `kept_edits`), and an index entry still naming
  // `before`'s blob goes (one the user staged stays).
  void sync_removals(git_tree* before, const std::vector<std::string>& paths,
                     std::vector<std::string>& kept_edits) const;
  // `content` as a checkout writes it at `path` (line-ending conversion and the other filters
  // .gitattributes and core.autocrlf ask for); itself when none applies.
  std::string to_work_tree(const std::string& path, const std::string& content) const;
  // Calls `edit` with the index as it is under git's lock (index.lock, taken first, as git does)
  // and, when it returns true (it changed something), has libgit2 write the result, which
  // replaces the index while the lock is held: a git command of the user's waits for the lock
  // or sees the index before or after, and nothing it wrote is lost. Retries while another
  // process holds the lock; then, or when the index cannot be read or written, throws
  // Error(environment) in the context `what()` names.
  void update_index(const std::function<bool(git_index*)>& edit, const std::function<std::string()>& what) const;
  // One attempt of update_index: false when index.lock is taken.
  bool try_update_index(const std::function<bool(git_index*)>& edit) const;
  // A process killed between moving the ref and syncing the checkout leaves a marker naming
  // the commit and its paths; the next commit or settled_scan (under the commit lock)
  // finishes that sync, so the user never sees the run as staged-reverted. The marker also
  // names the git locks taken while it exists (the branch's .lock, index.lock): a process killed
  // while holding one leaves it, and the next abtrack (holding the commit lock, so no live
  // abtrack owns it) removes a lock taken within seconds of the marker instead of failing on it
  // forever; a lock taken later is a user's git's and stays.
  std::filesystem::path sync_marker() const;
  void write_sync_marker(const std::string& content) const;
  void clear_sync_marker() const;
  std::vector<std::string> read_sync_marker() const;  // its whole lines; none when no sync is pending
  void remove_stale_locks() const;
  void finish_interrupted_sync() const;
  // The paths a status walk that leaves the top-level folders `leave_out` alone must name:
  // every other top-level entry of HEAD's tree, the index and the work-tree root (so new
  // untracked files count), plus `also`. Empty when there is nothing to walk.
  std::vector<std::string> walk_paths(const std::vector<std::string>& leave_out,
                                      const std::vector<std::string>& also) const;
  // Calls `fn(path, flags)` for each changed path among `paths` (exact paths or folders, no
  // pattern matching) until it returns true.
  void walk_status(const std::vector<std::string>& paths, const std::function<bool(const char*, unsigned)>& fn) const;
  git_repository* m_repo = nullptr;
  std::filesystem::path m_workdir;
};

// Frees a tree (nullptr is fine).
void free_tree(git_tree* tree);

// Throws Error(environment) with libgit2's last message when rc < 0.
void check_git(int rc, const std::string& what);

template <class Fn>
auto Repository::with_head(Fn&& fn) const {
  std::optional<std::string> commit;
  std::unique_ptr<git_tree, void (*)(git_tree*)> tree(head_tree(commit), free_tree);
  TreeView view(m_repo, tree.get(), std::move(commit));
  return fn(static_cast<const TreeView&>(view));
}

}  // namespace abtrack::gitstore
