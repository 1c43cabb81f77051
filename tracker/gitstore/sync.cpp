// After a commit, the work tree and the index made to agree with it for exactly its paths,
// the user's edits and staged changes kept; the index written by libgit2 under git's lock.
#include "gitstore/repository.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <git2.h>
#include <git2/sys/repository.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/trace.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

void Repository::sync_removals(git_tree* before_tree, const std::vector<std::string>& paths,
                               std::vector<std::string>& kept_edits) const {
  TreeView before(m_repo, before_tree, std::nullopt);
  struct Removed {
    const std::string& path;
    std::string content;  // as the tree before the commit has it
    git_oid id{};
  };
  std::vector<Removed> removed;
  for (const auto& path : paths) {
    auto previous = before.read(path);
    if (!previous) continue;
    Removed& r = removed.emplace_back(Removed{path, std::move(*previous)});
    check_git(git_odb_hash(&r.id, r.content.data(), r.content.size(), GIT_OBJECT_BLOB), "hashing " + path);
  }
  update_index(
      [&](git_index* index) {
        bool changed = false;
        for (const auto& r : removed) {
          const git_index_entry* e = git_index_get_bypath(index, r.path.c_str(), 0);
          if (!e || !git_oid_equal(&e->id, &r.id)) continue;  // staged by the user: theirs
          check_git(git_index_remove(index, r.path.c_str(), 0), "removing " + r.path + " from the index");
          changed = true;
        }
        return changed;
      },
      [&] {
        return fmt::format("updating the index for the removal of {} (`git reset -- {}` re-syncs it)",
                           fmt::join(paths, ", "), fmt::join(paths, " "));
      });
  for (const auto& r : removed) {
    const fs::path file = m_workdir / r.path;
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) continue;
    if (util::read_file(file) == to_work_tree(r.path, r.content)) fs::remove(file, ec);
    else kept_edits.push_back(r.path);
  }
}

namespace {
// `content` through the filters git applies at `path` in direction `mode`; itself when none apply.
std::string filtered(git_repository* repo, const std::string& path, const std::string& content,
                     git_filter_mode_t mode) {
  git_filter_list* filters = nullptr;
  if (git_filter_list_load(&filters, repo, nullptr, path.c_str(), mode, GIT_FILTER_DEFAULT) != 0 || !filters)
    return content;
  git_buf out{};
  const int rc = git_filter_list_apply_to_buffer(&out, filters, content.data(), content.size());
  git_filter_list_free(filters);
  std::string converted = rc == 0 && out.ptr ? std::string(out.ptr, out.size) : content;
  git_buf_dispose(&out);
  return converted;
}

// The index entry of a regular file at `path` holding blob `id`, with the stat data `st` of the
// file in the work tree; without it (nullptr) all zero, which git takes for a changed file.
git_index_entry index_entry(const std::string& path, const git_oid& id, const struct stat* st) {
  git_index_entry e{};
  if (st) {
    e.ctime.seconds = static_cast<std::int32_t>(st->st_ctim.tv_sec);
    e.ctime.nanoseconds = static_cast<std::uint32_t>(st->st_ctim.tv_nsec);
    e.mtime.seconds = static_cast<std::int32_t>(st->st_mtim.tv_sec);
    e.mtime.nanoseconds = static_cast<std::uint32_t>(st->st_mtim.tv_nsec);
    e.dev = static_cast<std::uint32_t>(st->st_dev);
    e.ino = static_cast<std::uint32_t>(st->st_ino);
    e.uid = static_cast<std::uint32_t>(st->st_uid);
    e.gid = static_cast<std::uint32_t>(st->st_gid);
    e.file_size = static_cast<std::uint32_t>(st->st_size);
  }
  e.mode = GIT_FILEMODE_BLOB;
  e.id = id;
  e.path = path.c_str();
  return e;
}
}  // namespace

std::string Repository::to_work_tree(const std::string& path, const std::string& content) const {
  return filtered(m_repo, path, content, GIT_FILTER_TO_WORKTREE);
}

std::string Repository::read_work_tree(const std::string& path) const {
  return filtered(m_repo, path, util::read_file(m_workdir / path), GIT_FILTER_TO_ODB);
}

void Repository::write_work_tree(const std::string& path, const std::string& content) const {
  util::write_file_atomic(m_workdir / path, to_work_tree(path, content));
}

void Repository::sync_checkout(git_tree* before_tree, const std::vector<std::pair<std::string, std::string>>& files,
                               const std::string& commit, std::vector<std::string>& kept_edits) const {
  // Make the index and work tree agree with the commit, for exactly these paths.
  TreeView before(m_repo, before_tree, std::nullopt);
  // The index entries are built from what is known: the content committed (its blob id; commits
  // write every file as a regular blob) and the stat data of the file just written.
  // git_index_add_bypath would read each file back, hash it and write its blob a second time.
  std::vector<git_index_entry> written;
  struct Kept {
    const std::string& path;
    git_oid id{};                // what the commit holds
    std::optional<git_oid> was;  // what the tree before it held
  };
  std::vector<Kept> kept;
  for (const auto& [path, content] : files) {
    fs::path file = m_workdir / path;
    std::optional<std::string> current;
    std::error_code ec;
    if (fs::exists(file, ec)) current = util::read_file(file);
    auto previous = before.read(path);
    // Compared and written as a checkout writes them (core.autocrlf, eol attributes): the
    // commit's text converted is the user's untouched file, not an edit.
    const std::string want = to_work_tree(path, content);
    const auto previous_checked_out =
        previous ? std::optional<std::string>(to_work_tree(path, *previous)) : std::nullopt;
    git_oid id{};
    check_git(git_odb_hash(&id, content.data(), content.size(), GIT_OBJECT_BLOB), "hashing " + path);
    if (current && *current != want && current != previous_checked_out) {
      // Edited while we ran (or a file of the user's where the commit put one): the user's text
      // wins in the work tree (its index entry is seen to below).
      kept_edits.push_back(path);
      Kept& k = kept.emplace_back(Kept{path, id, std::nullopt});
      if (previous)
        check_git(git_odb_hash(&k.was.emplace(), previous->data(), previous->size(), GIT_OBJECT_BLOB),
                  "hashing " + path);
      continue;
    }
    // git holds the content (the commit is made); the work-tree copy needs no fsync.
    if (current != want) util::write_file_atomic(file, want, util::Durability::ordinary);
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0)
      throw Error(Exit::environment, fmt::format("cannot stat {} after writing it: {}", path, std::strerror(errno)));
    written.push_back(index_entry(path, id, &st));
  }
  util::trace("work tree written");
  if (written.empty() && kept.empty()) return;
  std::vector<std::string> index_only;  // kept in the work tree, their index entries follow the commit
  update_index(
      [&](git_index* index) {
        index_only.clear();
        for (const auto& k : kept) {
          // A kept file's index entry still names the tree before the commit, which would stage an
          // undo of the commit for the user's next `git commit`; so it follows the commit, unless
          // the user has staged something of their own for the path. It gets no stat data: git
          // sees its size differ, reads it and shows it modified against the commit (` M`), as
          // any edit of a committed file.
          const git_index_entry* e = git_index_get_bypath(index, k.path.c_str(), 0);
          if (k.was ? !e || !git_oid_equal(&e->id, &*k.was) : e != nullptr) continue;
          const git_index_entry entry = index_entry(k.path, k.id, nullptr);
          check_git(git_index_add(index, &entry), "adding " + k.path + " to the index");
          index_only.push_back(k.path);
        }
        for (const auto& entry : written)
          check_git(git_index_add(index, &entry), fmt::format("adding {} to the index", entry.path));
        return !written.empty() || !index_only.empty();
      },
      [&] {
        std::vector<std::string> synced;
        for (const auto& entry : written) synced.emplace_back(entry.path);
        synced.insert(synced.end(), index_only.begin(), index_only.end());
        return fmt::format("updating the index for {} (the commit {} is made; `git reset -- {}` re-syncs it)",
                           fmt::join(synced, ", "), commit.substr(0, 12), fmt::join(synced, " "));
      });
}

namespace {
// git's lock on the index (index.lock), taken as git takes it (created, never opened if it
// exists) and released (removed) when this goes. libgit2 writes the new index under a name of
// abtrack's, `next` (through its own "<next>.lock"), which replaces the index while the lock is
// held: git's own lock protocol, where git renames index.lock itself over the index. `next` is
// only ever made under abtrack's commit lock, so one found there is a killed abtrack's.
class IndexLock {
 public:
  explicit IndexLock(const fs::path& gitdir)
      : m_index(gitdir / "index"), m_lock(gitdir / "index.lock"), m_next(gitdir / "abtrack-index") {}
  IndexLock(const IndexLock&) = delete;
  IndexLock& operator=(const IndexLock&) = delete;
  ~IndexLock() {
    if (!m_held) return;
    std::error_code ec;
    fs::remove(m_next, ec);
    ::unlink(m_lock.c_str());
  }
  // Takes the lock; false when another process holds it.
  bool take() {
    util::UniqueFd fd(::open(m_lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd) {
      if (errno == EEXIST) return false;
      throw Error(Exit::environment, fmt::format("cannot create {}: {}", m_lock.string(), std::strerror(errno)));
    }
    m_held = true;
    std::error_code ec;
    fs::remove(m_next, ec);
    fs::remove(m_next.string() + ".lock", ec);
    return true;
  }
  // A copy of the index at `next`, no file when there is no index yet. The copy's modification
  // time is the index's, in whole seconds: libgit2 takes an entry whose file changed no earlier
  // than that for racily clean, and looks at its file again when it writes. It compares
  // nanoseconds where git compares seconds (Debian's git is built without USE_NSEC), so with
  // the exact time it would pass over a file changed in the index's second after the index was
  // written, which git, once the new index is a second newer, would no longer see as changed.
  const fs::path& copy_index() const {
    struct stat st {};
    if (::stat(m_index.c_str(), &st) != 0) {
      if (errno == ENOENT) return m_next;
      throw Error(Exit::environment, fmt::format("cannot read {}: {}", m_index.string(), std::strerror(errno)));
    }
    std::error_code ec;
    const timespec times[2] = {{0, UTIME_OMIT}, {st.st_mtim.tv_sec, 0}};
    if (!fs::copy_file(m_index, m_next, ec) || ::utimensat(AT_FDCWD, m_next.c_str(), times, 0) != 0)
      throw Error(Exit::environment, fmt::format("cannot copy {} to {}: {}", m_index.string(), m_next.string(),
                                                 ec ? ec.message() : std::strerror(errno)));
    return m_next;
  }
  // Puts the index libgit2 wrote at `next` in place.
  void replace_index() const {
    if (::rename(m_next.c_str(), m_index.c_str()) != 0)
      throw Error(Exit::environment, fmt::format("cannot replace {}: {}", m_index.string(), std::strerror(errno)));
  }

 private:
  fs::path m_index, m_lock, m_next;
  bool m_held = false;
};
}  // namespace

bool Repository::try_update_index(const std::function<bool(git_index*)>& edit) const {
  IndexLock lock(git_repository_path(m_repo));
  if (!lock.take()) return false;
  Index index;
  if (git_index_open(index.out(), lock.copy_index().c_str()) < 0) throw index_error(m_repo);
  // The repository's own index while it is edited: libgit2 takes core.ignorecase, core.filemode
  // and core.symlinks from its configuration, and, when it writes, looks again at the racily
  // clean entries' files in the work tree (smudging those that changed), as git does.
  git_repository_set_index(m_repo, index.get());
  std::shared_ptr<void> restore(m_repo, [](git_repository* repo) { git_repository_set_index(repo, nullptr); });
  check_git(git_index_set_caps(index.get(), GIT_INDEX_CAPABILITY_FROM_OWNER), "reading the index's settings");
  if (!edit(index.get())) return true;
  check_git(git_index_write(index.get()), "writing the index");
  lock.replace_index();
  return true;
}

void Repository::update_index(const std::function<bool(git_index*)>& edit,
                              const std::function<std::string()>& what) const {
  for (int attempt = 1;; ++attempt) {
    bool done = false;
    try {
      done = try_update_index(edit);
    } catch (Error& e) {
      e.context(what());
      throw;  // the same exception, with its context
    }
    if (done) {
      util::trace("index written");
      return;
    }
    if (attempt >= 100)
      throw Error(
          Exit::environment,
          fmt::format("{}: {} stayed locked", what(), (fs::path(git_repository_path(m_repo)) / "index.lock").string()),
          "if no git process is running, remove that lock file");
    backoff(attempt);
  }
}

}  // namespace abtrack::gitstore
