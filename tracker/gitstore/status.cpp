// The status walks: what differs from HEAD in the index and the work tree, leaving abtrack's
// data folders alone.
#include "gitstore/repository.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/lock.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

std::vector<PathStatus> Repository::status(const std::vector<std::string>& paths) const {
  std::vector<PathStatus> out;
  std::vector<std::string> dirs;
  for (const auto& p : paths) {
    if (!p.empty() && p.back() == '/') {
      dirs.push_back(p.substr(0, p.size() - 1));
      continue;
    }
    unsigned flags = 0;
    int rc = git_status_file(&flags, m_repo, p.c_str());
    if (rc == GIT_ENOTFOUND) continue;
    check_git(rc, "reading the status of " + p);
    if (flags & kChanged) out.push_back(PathStatus{p, short_status(flags)});
  }
  if (!dirs.empty()) {
    std::vector<char*> specs;
    for (auto& d : dirs) specs.push_back(d.data());
    git_status_options opts = GIT_STATUS_OPTIONS_INIT;
    opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    opts.flags =
        GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
    opts.pathspec = {specs.data(), specs.size()};
    StatusList list;
    check_git(git_status_list_new(list.out(), m_repo, &opts), "reading the status of " + dirs.front());
    for (std::size_t i = 0; i < git_status_list_entrycount(list.get()); ++i) {
      const git_status_entry* e = git_status_byindex(list.get(), i);
      if (!(e->status & kChanged)) continue;
      const git_diff_delta* d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
      out.push_back(PathStatus{d && d->new_file.path ? d->new_file.path : "?", short_status(e->status)});
    }
  }
  return out;
}

std::vector<std::string> Repository::walk_paths(const std::vector<std::string>& leave_out,
                                                const std::vector<std::string>& also) const {
  std::vector<std::string> top;
  auto add = [&](std::string_view path) {
    std::string name(path.substr(0, path.find('/')));
    if (name.empty() || name == ".git" || std::find(leave_out.begin(), leave_out.end(), name) != leave_out.end())
      return;
    if (std::find(top.begin(), top.end(), name) == top.end()) top.push_back(std::move(name));
  };
  std::optional<std::string> commit;
  Tree head(head_tree(commit));
  for (std::size_t i = 0; head.get() && i < git_tree_entrycount(head.get()); ++i)
    add(git_tree_entry_name(git_tree_entry_byindex(head.get(), i)));
  // A path staged under a new top-level folder and since removed from the work tree is in
  // neither of the others.
  Index index;
  if (git_repository_index(index.out(), m_repo) < 0) throw index_error(m_repo);
  for (std::size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i)
    add(git_index_get_byindex(index.get(), i)->path);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(m_workdir, ec)) add(e.path().filename().string());
  for (const auto& p : also)
    if (std::find(top.begin(), top.end(), p) == top.end()) top.push_back(p);
  return top;
}

void Repository::walk_status(const std::vector<std::string>& paths,
                             const std::function<bool(const char*, unsigned)>& fn) const {
  if (paths.empty()) return;  // an empty path list would mean the whole work tree
  std::vector<char*> specs;
  for (const auto& p : paths) specs.push_back(const_cast<char*>(p.c_str()));
  git_status_options opts = GIT_STATUS_OPTIONS_INIT;
  opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  // Exact paths: libgit2 then walks only these entries of HEAD's tree, the index and the work
  // tree (a folder named covers everything under it) instead of matching every file.
  opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
               GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
  opts.pathspec = {specs.data(), specs.size()};
  struct Payload {
    const std::function<bool(const char*, unsigned)>& fn;
  } payload{fn};
  // The status list is complete before the first callback, so a retried scan reports no path twice.
  int rc = retry_while_files_change([&] {
    return git_status_foreach_ext(
        m_repo, &opts,
        [](const char* path, unsigned flags, void* p) -> int {
          if (!(flags & kChanged) || util::is_atomic_temp(path)) return 0;
          return static_cast<Payload*>(p)->fn(path, flags) ? 1 : 0;
        },
        &payload);
  });
  if (rc == 1) return;
  check_git(rc, "reading the work tree status");
}

Repository::Scan Repository::settled_scan(const std::vector<std::string>& watched,
                                          const std::vector<std::string>& leave_out, const PathSet& pass_over) const {
  util::FileLock lock(state_dir() / "commit.lock", std::chrono::seconds(120));
  finish_interrupted_sync();
  Scan scan;
  walk_status(walk_paths(leave_out, watched), [&](const char* path, unsigned flags) {
    if (std::find(watched.begin(), watched.end(), path) != watched.end())
      scan.watched.push_back(PathStatus{path, short_status(flags)});
    else if (!in_path_set(pass_over, path)) scan.other_changes = true;
    return false;
  });
  return scan;
}

bool Repository::dirty(const std::vector<std::string>& leave_out, const PathSet& pass_over) const {
  bool any = false;
  walk_status(walk_paths(leave_out, {}),
              [&](const char* path, unsigned) { return any = !in_path_set(pass_over, path); });
  return any;
}

std::vector<UntrackedFile> Repository::untracked(const std::vector<std::string>& leave_out) const {
  std::vector<UntrackedFile> out;
  walk_status(walk_paths(leave_out, {}), [&](const char* path, unsigned flags) {
    if (!(flags & GIT_STATUS_WT_NEW)) return false;
    struct stat st {};
    if (::lstat((m_workdir / path).c_str(), &st) != 0) return false;  // gone meanwhile
    out.push_back(UntrackedFile{path, static_cast<std::int64_t>(st.st_size),
                                static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
    return false;
  });
  std::sort(out.begin(), out.end(), [](const UntrackedFile& a, const UntrackedFile& b) { return a.path < b.path; });
  return out;
}

}  // namespace abtrack::gitstore
