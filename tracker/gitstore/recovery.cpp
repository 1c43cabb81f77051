// Crash recovery: the sync marker a commit leaves until its checkout is synced, the sync a
// kill interrupted finished, and the git locks a killed abtrack left removed.
#include "gitstore/repository.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>
#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

// Per work tree (a linked worktree has its own index and checkout), unlike state_dir().
fs::path Repository::sync_marker() const { return fs::path(git_repository_path(m_repo)) / "abtrack-sync-pending"; }

// The marker is one file, written in place and emptied when the sync is done (a new file and
// its removal every step cost ~0.15 ms); it is only ever written
// under the commit lock, after finish_interrupted_sync has emptied it. Empty or missing: no sync
// is pending. A write cut short by a kill leaves a prefix: readers use only whole lines, an id
// of 40 hex digits and lock paths that end in ".lock".
void Repository::write_sync_marker(const std::string& content) const {
  const fs::path marker = sync_marker();
  int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(Exit::environment, fmt::format("cannot write {}: {}", marker.string(), std::strerror(errno)));
  ssize_t n = ::pwrite(fd, content.data(), content.size(), 0);
  int err = errno;
  if (n == static_cast<ssize_t>(content.size()) && ::ftruncate(fd, static_cast<off_t>(content.size())) != 0) {
    err = errno;
    n = -1;
  }
  ::close(fd);
  if (n != static_cast<ssize_t>(content.size()))
    throw Error(Exit::environment,
                fmt::format("cannot write {}: {}", marker.string(), std::strerror(n < 0 ? err : ENOSPC)));
}

void Repository::clear_sync_marker() const {
  if (::truncate(sync_marker().c_str(), 0) != 0 && errno != ENOENT)
    throw Error(Exit::environment, fmt::format("cannot empty {}: {}", sync_marker().string(), std::strerror(errno)));
}

std::vector<std::string> Repository::read_sync_marker() const {
  std::vector<std::string> lines;
  struct stat st {};
  const fs::path marker = sync_marker();
  if (::stat(marker.c_str(), &st) != 0 || st.st_size == 0) return lines;
  // An unreadable marker is one no sync can be finished from: as if none were pending.
  const std::string content = util::try_read_file(marker).value_or({});
  for (std::size_t at = 0, nl; (nl = content.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(content.substr(at, nl - at));  // whole lines only
  return lines;
}

namespace {
// A lock taken within seconds of `note`'s modification time (the killed process's own): a lock a
// user's git took later is left alone.
void remove_lock_taken_near(const fs::path& note, const std::string& lock) {
  struct stat note_st {
  }, lock_st{};
  std::error_code ec;
  if (!lock.empty() && ::stat(note.c_str(), &note_st) == 0 && ::stat(lock.c_str(), &lock_st) == 0 &&
      lock_st.st_mtime >= note_st.st_mtime - 1 && lock_st.st_mtime <= note_st.st_mtime + 5)
    fs::remove(lock, ec);
}
}  // namespace

void Repository::remove_stale_locks() const {
  std::error_code ec;
  // Earlier versions noted each lock in abtrack-locking just before taking it.
  fs::path note = fs::path(git_repository_path(m_repo)) / "abtrack-locking";
  if (fs::exists(note, ec)) {
    std::string lock = util::read_file(note);
    while (!lock.empty() && lock.back() == '\n') lock.pop_back();
    remove_lock_taken_near(note, lock);
    fs::remove(note, ec);
  }
  // The sync marker names the locks taken while it is pending (absolute paths; files are relative).
  for (const auto& line : read_sync_marker())
    if (line.starts_with('/') && line.ends_with(".lock")) remove_lock_taken_near(sync_marker(), line);
}

void Repository::finish_interrupted_sync() const {
  remove_stale_locks();
  auto lines = read_sync_marker();
  if (lines.empty()) return;
  std::error_code ec;
  const std::string& id = lines.front();
  std::vector<std::string> paths;
  for (std::size_t i = 1; i < lines.size(); ++i)
    if (!lines[i].empty() && !lines[i].starts_with('/')) paths.push_back(lines[i]);  // '/': a lock it names
  auto tip = read_tip(m_repo);
  // Only when that commit is still HEAD: otherwise its ref move never happened, or HEAD has
  // moved on and the checkout is the user's business.
  git_oid oid;
  if (tip.oid && git_oid_fromstr(&oid, id.c_str()) == 0 && git_oid_equal(&oid, &*tip.oid)) {
    Commit c;
    check_git(git_commit_lookup(c.out(), m_repo, &oid), "reading " + id);
    Tree new_tree, old_tree;
    check_git(git_commit_tree(new_tree.out(), c.get()), "reading the tree of " + id);
    if (git_commit_parentcount(c.get()) > 0) {
      Commit parent;
      check_git(git_commit_parent(parent.out(), c.get(), 0), "reading the parent of " + id);
      check_git(git_commit_tree(old_tree.out(), parent.get()), "reading the parent tree of " + id);
    }
    TreeView view(m_repo, new_tree.get(), std::nullopt);
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& p : paths) {
      if (auto content = view.read(p)) files.emplace_back(p, std::move(*content));
      // The killed process's temp files (write_file_atomic names them .<name>.abtrack-<hex>.tmp).
      fs::path dir = (m_workdir / p).parent_path();
      std::string prefix = "." + fs::path(p).filename().string() + ".abtrack-";
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        std::string name = e.path().filename().string();
        if (name.starts_with(prefix) && util::is_atomic_temp(name)) fs::remove(e.path(), ec);
      }
    }
    std::vector<std::string> kept;  // the user's edits stay; preflight reports them
    sync_checkout(old_tree.get(), files, id, kept);
  }
  clear_sync_marker();
}

}  // namespace abtrack::gitstore
