// Repository::commit: a commit on the branch HEAD points to, built from the tip's tree and
// moved in by compare-and-swap, then the checkout synced.
#include "gitstore/repository.hpp"

#include <chrono>

#include <fmt/format.h>
#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"
#include "util/lock.hpp"
#include "util/trace.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

namespace {

// The tree of `base` (nullptr: empty) with the change's files written as blobs and put in, and
// its removals taken out. Never the index: what the user staged stays out of the commit.
git_oid write_tree(git_repository* repo, git_tree* base, const Change& change) {
  std::vector<git_tree_update> updates;
  // git_odb_write hashes first and writes only a blob the repository lacks, as `git add` does
  // (git_blob_create_from_buffer streams every blob through a temporary file, even a known one).
  Odb odb;
  check_git(git_repository_odb(odb.out(), repo), "opening the object database");
  for (const auto& [path, content] : change.files) {
    git_tree_update u{};
    u.action = GIT_TREE_UPDATE_UPSERT;
    check_git(git_odb_write(&u.id, odb.get(), content.data(), content.size(), GIT_OBJECT_BLOB), "writing " + path);
    u.filemode = GIT_FILEMODE_BLOB;
    u.path = path.c_str();
    updates.push_back(u);
  }
  util::trace("blobs written");
  for (const auto& path : change.removals) {
    git_tree_update u{};
    u.action = GIT_TREE_UPDATE_REMOVE;
    u.path = path.c_str();
    updates.push_back(u);
  }
  git_oid tree_id;
  check_git(git_tree_create_updated(&tree_id, repo, base, updates.size(), updates.data()), "building the tree");
  util::trace("trees written");
  return tree_id;
}

// The commit object of `tree_id` on top of `parent` (none on an unborn branch); no ref moves.
git_oid write_commit(git_repository* repo, const std::optional<git_oid>& parent_id, const git_oid& tree_id,
                     const git_signature* author, const git_signature* committer, const std::string& message) {
  Tree tree;
  check_git(git_tree_lookup(tree.out(), repo, &tree_id), "reading the new tree");
  Commit parent;
  const git_commit* parents[1] = {nullptr};
  std::size_t n = 0;
  if (parent_id) {
    check_git(git_commit_lookup(parent.out(), repo, &*parent_id), "reading HEAD");
    parents[0] = parent.get();
    n = 1;
  }
  git_oid id;
  check_git(git_commit_create(&id, repo, nullptr, author, committer, nullptr, message.c_str(), tree.get(), n, parents),
            "creating the commit");
  return id;
}

// The lock file git takes to move `ref` ("HEAD" when detached).
fs::path ref_lock(git_repository* repo, const std::string& ref) {
  if (ref == "HEAD") return fs::path(git_repository_path(repo)) / "HEAD.lock";
  return fs::path(git_repository_commondir(repo)) / (ref + ".lock");
}

}  // namespace

Committed Repository::commit(const std::function<Change(const TreeView&)>& build) {
  Signature author(make_signature(m_repo, "AUTHOR"));
  Signature committer(make_signature(m_repo, "COMMITTER"));
  // abtrack processes take turns; the ref compare-and-swap below still guards against any
  // other writer (the user's git, another tool).
  util::FileLock lock(state_dir() / "commit.lock", std::chrono::seconds(120));
  finish_interrupted_sync();

  constexpr int kMaxAttempts = 60;
  Committed result;
  Change change;
  Tree old_tree;
  for (int attempt = 1;; ++attempt) {
    const Tip tip = read_tip(m_repo);
    old_tree.reset(tree_of(m_repo, tip.oid));
    TreeView view(m_repo, old_tree.get(), tip.oid ? std::optional<std::string>(hex(*tip.oid)) : std::nullopt);
    change = build(view);
    if (change.skip) return result;  // result.commit stays empty
    const git_oid id = write_commit(m_repo, tip.oid, write_tree(m_repo, old_tree.get(), change), author.get(),
                                    committer.get(), change.message);
    // The sync marker (see finish_interrupted_sync) also names, as absolute paths, the git locks
    // this invocation takes while it exists: the branch's and the index's. A lock left by a kill
    // inside that window is ours, and remove_stale_locks knows it from the marker's time.
    std::string marker = hex(id) + "\n";
    for (const auto& f : change.files) marker += f.first + "\n";
    marker += ref_lock(m_repo, tip.ref).string() + "\n";
    marker += (fs::path(git_repository_path(m_repo)) / "index.lock").string() + "\n";
    write_sync_marker(marker);
    // Compare-and-swap: move the ref only if it still points where we built on.
    const std::string reflog = "commit: " + change.message.substr(0, change.message.find('\n'));
    Reference ref;
    int rc = tip.oid
                 ? git_reference_create_matching(ref.out(), m_repo, tip.ref.c_str(), &id, 1, &*tip.oid, reflog.c_str())
                 : git_reference_create(ref.out(), m_repo, tip.ref.c_str(), &id, 0, reflog.c_str());
    util::trace("commit object written");
    if (rc == 0) {
      result.commit = hex(id);
      result.attempts = attempt;
      break;
    }
    // The ref did not move: nothing to sync, and a lock that made it fail is someone else's.
    clear_sync_marker();
    if (rc != GIT_EMODIFIED && rc != GIT_ELOCKED && rc != GIT_EEXISTS) check_git(rc, "updating " + tip.ref);
    if (attempt >= kMaxAttempts) {
      if (rc == GIT_ELOCKED)
        throw Error(Exit::environment,
                    fmt::format("{} stayed locked through {} attempts: {}", tip.ref, attempt,
                                ref_lock(m_repo, tip.ref).string()),
                    "if no git process is running, remove that lock file");
      throw Error(Exit::environment, fmt::format("{} kept moving; gave up after {} attempts", tip.ref, attempt));
    }
    backoff(attempt);
  }

  for (const auto& [name, target] : change.refs) {
    git_oid oid = parse_oid(target);
    Reference ref;
    check_git(git_reference_create(ref.out(), m_repo, name.c_str(), &oid, 1, "abtrack"), "creating " + name);
  }

  util::trace("ref moved");
  sync_checkout(old_tree.get(), change.files, result.commit, result.kept_edits);
  if (!change.removals.empty()) sync_removals(old_tree.get(), change.removals, result.kept_edits);
  clear_sync_marker();
  return result;
}

}  // namespace abtrack::gitstore
