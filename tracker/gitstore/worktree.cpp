// Linked work trees for the code of a revision (Repository::add_worktree and its kin): a real
// checkout of a commit, with submodules and Git LFS content, where `git` tells the truth.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>

#include <fmt/format.h>

#include "gitstore/internal.hpp"
#include "gitstore/repository.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

namespace {

// The repository whose git dir or work tree is `path` itself (never one above it); nullptr when none.
git_repository* open_exact(const fs::path& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return nullptr;
  git_repository* repo = nullptr;
  if (git_repository_open_ext(&repo, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) < 0) {
    git_error_clear();
    return nullptr;
  }
  return repo;
}

bool has_object(git_repository* repo, const git_oid& id) {
  Odb odb;
  if (git_repository_odb(odb.out(), repo) < 0) {
    git_error_clear();
    return false;
  }
  return git_odb_exists(odb.get(), &id) == 1;
}

// A Git LFS pointer file (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md).
struct LfsPointer {
  std::string oid;  // 64 hex digits of the content's SHA-256
  std::uint64_t size = 0;
};

std::optional<LfsPointer> parse_lfs_pointer(std::string_view text) {
  constexpr std::string_view header = "version https://git-lfs.github.com/spec/v1\n";
  if (!text.starts_with(header)) return std::nullopt;
  LfsPointer p;
  bool sized = false;
  for (std::size_t at = header.size(); at < text.size();) {
    auto end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("oid sha256:")) {
      p.oid = std::string(line.substr(11));
    } else if (line.starts_with("size ")) {
      auto digits = line.substr(5);
      if (digits.empty() || digits.size() > 19) return std::nullopt;
      for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        p.size = p.size * 10 + static_cast<std::uint64_t>(c - '0');
      }
      sized = true;
    }
  }
  if (p.oid.size() != 64 || !sized || p.oid.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  return p;
}

// Gives each LFS pointer file of the work tree `workdir` of `repo` its content from `objects`
// (<repository>/lfs/objects/<aa>/<bb>/<oid>), and its index entry the new file's stat data
// (the id stays the pointer's), so git sees the file as checked out, as git-lfs's smudge leaves
// it. Returns the pointers whose content is missing there.
std::vector<std::string> fill_lfs(git_repository* repo, const fs::path& workdir, const fs::path& objects) {
  std::vector<std::string> missing;
  std::error_code ec;
  Index index;
  check_git(git_repository_index(index.out(), repo), "reading the index of " + workdir.string());
  std::deque<std::string> paths;  // the updated entries' paths, alive until they are added
  std::vector<git_index_entry> updates;
  const std::size_t n = git_index_entrycount(index.get());
  for (std::size_t i = 0; i < n; ++i) {
    const git_index_entry* e = git_index_get_byindex(index.get(), i);
    // A pointer has 126 to 1023 bytes (the spec's header, oid and size lines; extensions).
    if (!e || git_index_entry_stage(e) != 0 || e->file_size < 126 || e->file_size > 1023 ||
        (e->mode != GIT_FILEMODE_BLOB && e->mode != GIT_FILEMODE_BLOB_EXECUTABLE))
      continue;
    Blob blob;
    if (git_blob_lookup(blob.out(), repo, &e->id) < 0) {
      git_error_clear();
      continue;
    }
    auto pointer = parse_lfs_pointer(std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                                                      static_cast<std::size_t>(git_blob_rawsize(blob.get()))));
    if (!pointer) continue;
    const fs::path object = objects / pointer->oid.substr(0, 2) / pointer->oid.substr(2, 2) / pointer->oid;
    auto size = fs::file_size(object, ec);
    if (ec || size != pointer->size) {
      missing.emplace_back(e->path);
      continue;
    }
    const fs::path file = workdir / e->path;
    const fs::path temp = file.parent_path() / fmt::format(".{}.abtrack-lfs.tmp", file.filename().string());
    fs::copy_file(object, temp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::permissions(temp, e->mode == GIT_FILEMODE_BLOB_EXECUTABLE ? fs::perms(0755) : fs::perms(0644), ec);
    if (!ec) fs::rename(temp, file, ec);
    if (ec) {
      fs::remove(temp, ec);
      throw Error(Exit::environment,
                  fmt::format("cannot write the Git LFS content of {}: {}", file.string(), ec.message()));
    }
    // Older than the index written below, so that git trusts the stat data (a file as new as
    // the index is "racily clean" and compared by content: the pointer, which differs).
    struct timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= 2;
    times[1] = times[0];
    struct stat st {};
    if (::utimensat(AT_FDCWD, file.c_str(), times, 0) != 0 || ::stat(file.c_str(), &st) != 0)
      throw Error(Exit::environment, fmt::format("cannot read back {}", file.string()));
    git_index_entry updated = *e;
    paths.emplace_back(e->path);
    updated.path = paths.back().c_str();
    updated.ctime = {static_cast<std::int32_t>(st.st_ctim.tv_sec), static_cast<std::uint32_t>(st.st_ctim.tv_nsec)};
    updated.mtime = {static_cast<std::int32_t>(st.st_mtim.tv_sec), static_cast<std::uint32_t>(st.st_mtim.tv_nsec)};
    updated.dev = static_cast<std::uint32_t>(st.st_dev);
    updated.ino = static_cast<std::uint32_t>(st.st_ino);
    updated.uid = st.st_uid;
    updated.gid = st.st_gid;
    updated.file_size = static_cast<std::uint32_t>(st.st_size);
    updates.push_back(updated);
  }
  for (const auto& u : updates)
    check_git(git_index_add(index.get(), &u), fmt::format("recording {} in the index", u.path));
  if (!updates.empty()) check_git(git_index_write(index.get()), "writing the index of " + workdir.string());
  return missing;
}

struct FoundSubmodule {
  std::string name, path, url;
  git_oid id{};
};

// Clones and checks out the submodules of `repo` (work tree `workdir`) at their gitlinks, from
// a copy that the source holds: `src_gitdir`/modules/<name>, `src_workdir`/<path>, or a URL
// that is a local path (relative ones from `src_workdir`). `prefix` names them for messages.
void checkout_submodules(git_repository* repo, const fs::path& workdir, const fs::path& src_gitdir,
                         const fs::path& src_workdir, const std::string& prefix) {
  std::vector<FoundSubmodule> subs;
  auto collect = [](git_submodule* sm, const char* name, void* payload) -> int {
    const git_oid* id = git_submodule_head_id(sm);
    if (!id) return 0;  // named in .gitmodules, not in the commit
    FoundSubmodule f;
    f.name = name;
    f.path = git_submodule_path(sm);
    if (const char* url = git_submodule_url(sm)) f.url = url;
    f.id = *id;
    static_cast<std::vector<FoundSubmodule>*>(payload)->push_back(std::move(f));
    return 0;
  };
  check_git(git_submodule_foreach(repo, collect, &subs), "reading the submodules of " + workdir.string());
  for (const auto& s : subs) {
    const std::string shown = prefix + s.path;
    std::vector<fs::path> candidates{src_gitdir / "modules" / s.name};
    if (!src_workdir.empty()) candidates.push_back(src_workdir / s.path);
    if (s.url.starts_with("file://")) candidates.emplace_back(s.url.substr(7));
    else if (s.url.starts_with("/")) candidates.emplace_back(s.url);
    else if ((s.url.starts_with("./") || s.url.starts_with("../")) && !src_workdir.empty())
      candidates.push_back((src_workdir / s.url).lexically_normal());
    Repo source;
    for (const auto& c : candidates) {
      source.reset(open_exact(c));
      if (source.get() && has_object(source.get(), s.id)) break;
      source.reset(nullptr);
    }
    if (!source.get())
      throw Error(
          Exit::environment,
          fmt::format("submodule '{}' ({}) at {}: no copy of it in this repository has that commit{}", s.name, shown,
                      hex(s.id).substr(0, 12), s.url.empty() ? "" : fmt::format(" (its URL: {})", s.url)),
          "abtrack takes a submodule from .git/modules/, from its folder in your work tree or from a URL that is a local "
          "path, and never fetches: run `git submodule update --init --recursive` in your repository, then run again");
    const fs::path target = workdir / s.path;
    std::error_code ec;
    fs::remove(target, ec);  // the empty folder the checkout made for it
    git_clone_options opts = GIT_CLONE_OPTIONS_INIT;
    opts.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;
    const std::string from = git_repository_path(source.get());
    Repo sub;
    if (git_clone(sub.out(), from.c_str(), target.c_str(), &opts) < 0 ||
        git_repository_set_head_detached(sub.get(), &s.id) < 0)
      throw Error(Exit::environment, fmt::format("submodule '{}' ({}): cannot clone it from {}: {}", s.name, shown,
                                                 from, last_git_message()));
    git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
    co.checkout_strategy = GIT_CHECKOUT_FORCE;
    check_git(git_checkout_head(sub.get(), &co), fmt::format("checking out submodule '{}' ({})", s.name, shown));
    const char* source_workdir = git_repository_workdir(source.get());
    checkout_submodules(sub.get(), target, fs::path(git_repository_path(source.get())),
                        source_workdir ? fs::path(source_workdir) : fs::path(), shown + "/");
  }
}

}  // namespace

void Repository::prune_worktree(const std::string& name) const {
  Worktree wt;
  if (git_worktree_lookup(wt.out(), m_repo, name.c_str()) == 0) {
    git_worktree_prune_options opts = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    opts.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_LOCKED;
    if (git_worktree_prune(wt.get(), &opts) == 0) return;
  }
  git_error_clear();
  // Not one libgit2 reads (a registration left half-written): its folder goes.
  const fs::path admin = fs::path(git_repository_commondir(m_repo)) / "worktrees" / name;
  std::error_code ec;
  fs::remove_all(admin, ec);
  if (ec)
    throw Error(Exit::environment,
                fmt::format("cannot remove the work tree registration {}: {}", admin.string(), ec.message()));
}

std::vector<std::string> Repository::add_worktree(const std::string& name, const fs::path& dir,
                                                  const std::string& commit) const {
  git_oid id = parse_oid(commit);
  Commit target;
  check_git(git_commit_lookup(target.out(), m_repo, &id), "reading the commit " + commit);
  prune_worktree(name);
  // libgit2 1.5 makes a linked work tree on a branch only: a branch of its own for the moment
  // of the add, deleted once the work tree's HEAD is detached at the commit.
  const std::string branch = "abtrack-adding-" + name;
  Reference ref;
  check_git(git_branch_create(ref.out(), m_repo, branch.c_str(), target.get(), 1), "making the branch " + branch);
  auto drop_branch = [&] {
    if (ref.get() && git_branch_delete(ref.get()) < 0) git_error_clear();
    ref.reset(nullptr);
  };
  git_worktree_add_options opts = GIT_WORKTREE_ADD_OPTIONS_INIT;
  opts.ref = ref.get();
  opts.checkout_options.checkout_strategy = GIT_CHECKOUT_NONE;  // checked out below, detached
  Worktree wt;
  Repo work;
  if (git_worktree_add(wt.out(), m_repo, name.c_str(), dir.c_str(), &opts) < 0 ||
      git_repository_open(work.out(), dir.c_str()) < 0 || git_repository_set_head_detached(work.get(), &id) < 0) {
    std::string why = last_git_message();
    drop_branch();
    throw Error(Exit::environment,
                fmt::format("cannot make a work tree of {} at {}: {}", commit.substr(0, 12), dir.string(), why));
  }
  drop_branch();
  git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
  co.checkout_strategy = GIT_CHECKOUT_FORCE;
  check_git(git_checkout_head(work.get(), &co),
            fmt::format("checking out {} into {}", commit.substr(0, 12), dir.string()));
  const fs::path common = git_repository_commondir(m_repo);
  checkout_submodules(work.get(), dir, common, m_workdir, "");
  return fill_lfs(work.get(), dir, common / "lfs" / "objects");
}

std::optional<std::string> Repository::worktree_head(const fs::path& dir) const {
  Repo work(open_exact(dir));
  if (!work.get() || !git_repository_is_worktree(work.get())) return std::nullopt;
  if (fs::path(git_repository_commondir(work.get())).lexically_normal() !=
      fs::path(git_repository_commondir(m_repo)).lexically_normal())
    return std::nullopt;
  git_oid id;
  if (git_reference_name_to_id(&id, work.get(), "HEAD") < 0) {
    git_error_clear();
    return std::nullopt;
  }
  return hex(id);
}

void Repository::move_worktree(const fs::path& dir, const std::string& commit) const {
  git_oid id = parse_oid(commit);
  Repo work;
  check_git(git_repository_open(work.out(), dir.c_str()), "opening the work tree " + dir.string());
  Commit target;
  check_git(git_commit_lookup(target.out(), work.get(), &id), "reading the commit " + commit);
  // Only the paths that differ between the two commits are looked at (abtrack's data, when run
  // commits moved the branch): a checkout of the whole tree would stat every file.
  Reference head;
  Commit current;
  Tree from, to;
  check_git(git_repository_head(head.out(), work.get()), "reading the HEAD of " + dir.string());
  check_git(git_commit_lookup(current.out(), work.get(), git_reference_target(head.get())),
            "reading the HEAD of " + dir.string());
  check_git(git_commit_tree(from.out(), current.get()), "reading the HEAD of " + dir.string());
  check_git(git_commit_tree(to.out(), target.get()), "reading the tree of " + commit);
  git_diff* diff = nullptr;
  check_git(git_diff_tree_to_tree(&diff, work.get(), from.get(), to.get(), nullptr),
            "comparing the HEAD of " + dir.string());
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff, i);
    paths.emplace_back(d->old_file.path);
    if (std::string_view(d->new_file.path) != d->old_file.path) paths.emplace_back(d->new_file.path);
  }
  git_diff_free(diff);
  if (!paths.empty()) {
    std::vector<char*> specs;
    for (auto& p : paths) specs.push_back(p.data());
    git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
    co.checkout_strategy = GIT_CHECKOUT_SAFE | GIT_CHECKOUT_ALLOW_CONFLICTS | GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
    co.paths = {specs.data(), specs.size()};
    check_git(git_checkout_tree(work.get(), reinterpret_cast<const git_object*>(target.get()), &co),
              fmt::format("checking out {} into {}", commit.substr(0, 12), dir.string()));
  }
  check_git(git_repository_set_head_detached(work.get(), &id), "moving the HEAD of " + dir.string());
}

}  // namespace abtrack::gitstore
