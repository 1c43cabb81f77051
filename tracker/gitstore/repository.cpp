#include "gitstore/repository.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <git2.h>
#include <git2/sys/repository.h>

#include "gitstore/handles.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/lock.hpp"
#include "util/trace.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

namespace {

std::string last_git_message() {
  const git_error* e = git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

std::string hex(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return buf;
}

git_oid parse_oid(const std::string& s) {
  git_oid oid;
  check_git(git_oid_fromstr(&oid, s.c_str()), "parsing object id " + s);
  return oid;
}

void ensure_init() {
  // Shut down at exit, after every Repository (all are locals of commands) is gone: frees
  // libgit2's global and thread-local state (its error buffers), so LeakSanitizer stays quiet.
  struct Library {
    Library() {
      git_libgit2_init();
      // What keeps a step flat as runs/<experiment>/ grows to thousands of records:
      // - libgit2 re-hashes every object it reads to check its id; git itself does not (the
      //   content is zlib-checksummed), and a step reads the 1000-entry runs tree several times.
      git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
      // - it looks up every entry of a tree it writes to check that the object exists; the
      //   entries are the tip's own plus blobs just written.
      git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 0);
      // - it caches trees of up to 4 KiB only; the runs tree is ~40 bytes a record.
      git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, static_cast<std::size_t>(16) << 20);
    }
    ~Library() { git_libgit2_shutdown(); }
  };
  static const Library library;
}

// HEAD's ref name ("refs/heads/main", or "HEAD" when detached) and its current target.
struct Tip {
  std::string ref;
  std::optional<git_oid> oid;
};

Tip read_tip(git_repository* repo) {
  Reference head;
  int rc = git_reference_lookup(head.out(), repo, "HEAD");
  check_git(rc, "reading HEAD");
  if (git_reference_type(head.get()) == GIT_REFERENCE_SYMBOLIC) {
    Tip t{git_reference_symbolic_target(head.get()), std::nullopt};
    git_oid oid;
    rc = git_reference_name_to_id(&oid, repo, t.ref.c_str());
    if (rc == 0) t.oid = oid;
    else if (rc != GIT_ENOTFOUND) check_git(rc, "reading " + t.ref);
    return t;
  }
  return Tip{"HEAD", *git_reference_target(head.get())};
}

git_tree* tree_of(git_repository* repo, const std::optional<git_oid>& commit_id) {
  if (!commit_id) return nullptr;
  Commit c;
  check_git(git_commit_lookup(c.out(), repo, &*commit_id), "reading the HEAD commit");
  git_tree* t = nullptr;
  check_git(git_commit_tree(&t, c.get()), "reading the HEAD tree");
  return t;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v && *v) return std::string(v);
  return std::nullopt;
}

// libgit2 re-reads the status of every configuration file (.git/config, ~/.gitconfig,
// /etc/gitconfig, ...) at each lookup through a repository's live configuration: each
// configuration variable it consults the first time (core.autocrlf, core.ignorecase,
// core.protectNTFS, ... ~15 in a step) and each snapshot it takes (diff, attributes, the reflog's
// signature) stat()s them all, ~60 stat calls a step. The repository is given one snapshot,
// taken when it is opened, as its configuration instead: libgit2 then reads it from memory. A
// command sees the configuration as it was when it started (abtrack writes none); if the
// snapshot cannot be taken, the live configuration stays.
void freeze_config(git_repository* repo) {
  Config snapshot;
  if (git_repository_config_snapshot(snapshot.out(), repo) == 0) git_repository_set_config(repo, snapshot.get());
  git_error_clear();
}

std::optional<std::string> config_string(git_repository* repo, const char* key) {
  Config cfg;
  if (git_repository_config_snapshot(cfg.out(), repo) != 0) return std::nullopt;
  const char* v = nullptr;
  if (git_config_get_string(&v, cfg.get(), key) != 0 || !v || !*v) return std::nullopt;
  return std::string(v);
}

// GIT_AUTHOR_* / GIT_COMMITTER_* first, then user.name / user.email (libgit2's own default
// ignores the environment variables).
git_signature* make_signature(git_repository* repo, const char* who) {
  auto name = env(fmt::format("GIT_{}_NAME", who).c_str());
  auto email = env(fmt::format("GIT_{}_EMAIL", who).c_str());
  if (!name) name = config_string(repo, "user.name");
  if (!email) email = config_string(repo, "user.email");
  if (!name || !email)
    throw Error(Exit::environment,
                fmt::format("no git identity: {} is not set", !name ? "user.name" : "user.email"),
                "run git config --global user.name \"Your Name\" and git config --global user.email you@example.com "
                "(or set GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL and GIT_COMMITTER_NAME/GIT_COMMITTER_EMAIL)");
  git_signature* sig = nullptr;
  check_git(git_signature_now(&sig, name->c_str(), email->c_str()), "making the commit signature");
  return sig;
}

void backoff(int attempt) {
  thread_local std::mt19937 rng{std::random_device{}()};
  int cap = std::min(200, 2 << std::min(attempt, 7));
  std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(1, cap)(rng)));
}

std::string short_status(unsigned flags) {
  if (flags & GIT_STATUS_WT_NEW) return "??";
  char i = ' ', w = ' ';
  if (flags & GIT_STATUS_INDEX_NEW) i = 'A';
  else if (flags & GIT_STATUS_INDEX_MODIFIED) i = 'M';
  else if (flags & GIT_STATUS_INDEX_DELETED) i = 'D';
  else if (flags & GIT_STATUS_INDEX_RENAMED) i = 'R';
  else if (flags & GIT_STATUS_INDEX_TYPECHANGE) i = 'T';
  if (flags & GIT_STATUS_WT_MODIFIED) w = 'M';
  else if (flags & GIT_STATUS_WT_DELETED) w = 'D';
  else if (flags & GIT_STATUS_WT_TYPECHANGE) w = 'T';
  else if (flags & GIT_STATUS_WT_RENAMED) w = 'R';
  if (flags & GIT_STATUS_CONFLICTED) return "UU";
  return std::string{i, w};
}

constexpr unsigned kChanged = ~static_cast<unsigned>(GIT_STATUS_IGNORED) & ~static_cast<unsigned>(GIT_STATUS_CURRENT);

// Whether `path` is one of `paths` or lies in one of its folders (entries ending in '/').
bool in_path_set(const PathSet& paths, std::string_view path) {
  return std::any_of(paths.begin(), paths.end(), [&](const std::string& p) {
    return p.ends_with('/') ? path.starts_with(p) || path == std::string_view(p).substr(0, p.size() - 1) : path == p;
  });
}

// libgit2 reads a work-tree file with the size it stat'ed in its scan: a file replaced or removed
// meanwhile (an editor saving, another abtrack renaming its document into place) fails that scan
// with an OS or filesystem error. The scan is tried again a few times; other errors are final.
int retry_while_files_change(const std::function<int()>& scan) {
  int rc = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if ((rc = scan()) >= 0) return rc;
    const git_error* e = git_error_last();
    if (!e || (e->klass != GIT_ERROR_OS && e->klass != GIT_ERROR_FILESYSTEM)) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(5 << attempt));
  }
  return rc;
}

// What libgit2 could not read in the index, and what to do about it.
Error index_error(git_repository* repo) {
  const std::string why = last_git_message();
  const std::string where = (fs::path(git_repository_path(repo)) / "index").string();
  if (why.find("'link'") != std::string::npos)
    return Error(Exit::environment,
                 fmt::format("the index {} is split (git update-index --split-index), which abtrack (libgit2 1.5) cannot read", where),
                 "unsplit it: git update-index --no-split-index (and git config core.splitIndex false if it is set)");
  return Error(Exit::environment, fmt::format("cannot read the index {}: {}", where, why),
               why.find("checksum") != std::string::npos
                   ? "the file is damaged (git does not check its checksum when it reads it): `git status` shows what git "
                     "makes of it, and `git update-index --really-refresh` writes it again from what git read"
                   : std::string());
}

}  // namespace

void free_tree(git_tree* tree) {
  if (tree) git_tree_free(tree);
}

void check_git(int rc, const std::string& what) {
  if (rc < 0) throw Error(Exit::environment, fmt::format("{}: {}", what, last_git_message()));
}

// ---- TreeView ----------------------------------------------------------------------------

const git_tree* TreeView::folder(const std::string& dir) const {
  for (const auto& [name, tree] : m_folders)
    if (name == dir) return tree.get();
  if (!m_tree) return nullptr;
  TreeEntry e;
  if (git_tree_entry_bypath(e.out(), m_tree, dir.c_str()) != 0) {
    git_error_clear();
    return nullptr;
  }
  if (git_tree_entry_type(e.get()) != GIT_OBJECT_TREE) return nullptr;
  git_tree* tree = nullptr;
  check_git(git_tree_lookup(&tree, m_repo, git_tree_entry_id(e.get())), "reading " + dir);
  m_folders.emplace_back(dir, std::shared_ptr<git_tree>(tree, git_tree_free));
  return tree;
}

std::vector<Entry> TreeView::list(const std::string& dir) const {
  std::vector<Entry> out;
  const git_tree* tree = folder(dir);
  if (!tree) return out;
  const std::size_t n = git_tree_entrycount(tree);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree, i);
    const git_filemode_t mode = git_tree_entry_filemode(e);
    if (mode == GIT_FILEMODE_TREE || mode == GIT_FILEMODE_COMMIT) continue;  // folders and submodules: no files
    Entry& entry = out.emplace_back();
    entry.name = git_tree_entry_name(e);
    git_oid_fmt(entry.oid_hex.data(), git_tree_entry_id(e));
  }
  return out;
}

std::vector<std::string> TreeView::folders(const std::string& dir) const {
  std::vector<std::string> out;
  const git_tree* tree = folder(dir);
  for (std::size_t i = 0, n = tree ? git_tree_entrycount(tree) : 0; i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree, i);
    if (git_tree_entry_filemode(e) == GIT_FILEMODE_TREE) out.emplace_back(git_tree_entry_name(e));
  }
  return out;
}

std::optional<std::string> TreeView::read(const std::string& path) const {
  if (!m_tree) return std::nullopt;
  TreeEntry e;
  if (git_tree_entry_bypath(e.out(), m_tree, path.c_str()) != 0) return std::nullopt;
  if (git_tree_entry_type(e.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  return read_blob(hex(*git_tree_entry_id(e.get())));
}

std::string TreeView::read_blob(std::string_view oid_hex) const {
  git_oid oid = parse_oid(std::string(oid_hex));
  Blob b;
  check_git(git_blob_lookup(b.out(), m_repo, &oid), "reading blob " + std::string(oid_hex));
  return std::string(static_cast<const char*>(git_blob_rawcontent(b.get())),
                     static_cast<std::size_t>(git_blob_rawsize(b.get())));
}

std::string HistoryEntry::trailer(std::string_view key) const {
  for (const auto& [k, v] : trailers)
    if (k == key) return v;
  return {};
}

// ---- Repository --------------------------------------------------------------------------

Repository::Repository(git_repository* repo) : m_repo(repo) {
  std::string wd = git_repository_workdir(repo);
  while (wd.size() > 1 && wd.back() == '/') wd.pop_back();
  m_workdir = wd;
}
Repository::Repository(Repository&& o) noexcept : m_repo(o.m_repo), m_workdir(std::move(o.m_workdir)) {
  o.m_repo = nullptr;
}
Repository& Repository::operator=(Repository&& o) noexcept {
  std::swap(m_repo, o.m_repo);
  std::swap(m_workdir, o.m_workdir);
  return *this;
}
Repository::~Repository() {
  if (m_repo) git_repository_free(m_repo);
}

Repository Repository::discover(const fs::path& start) {
  ensure_init();
  git_repository* repo = nullptr;
  int rc = git_repository_open_ext(&repo, start.c_str(), 0, nullptr);
  // libgit2 1.5 reports a repository owned by another user as GIT_ENOTFOUND (or GIT_EOWNER)
  // with "repository path '<path>' is not owned by current user": name that path and the fix.
  std::string msg = rc < 0 ? last_git_message() : std::string();
  if (rc == GIT_EOWNER || msg.find("not owned by current user") != std::string::npos) {
    std::string path = start.string();
    if (auto a = msg.find('\''), b = msg.find('\'', a + 1); a != std::string::npos && b != std::string::npos) path = msg.substr(a + 1, b - a - 1);
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    throw Error(Exit::environment, fmt::format("the repository at {} is owned by another user; git (and abtrack) refuse to use it", path),
                fmt::format("if you trust it: git config --global --add safe.directory {}", path));
  }
  if (rc == GIT_ENOTFOUND) {
    // libgit2 1.5 skips a repository owned by another user and then finds none: look for it.
    std::error_code ec;
    for (fs::path p = fs::absolute(start, ec);; p = p.parent_path()) {
      struct stat st {};
      if (::stat((p / ".git").c_str(), &st) == 0) {
        if (st.st_uid != ::geteuid())
          throw Error(Exit::environment,
                      fmt::format("the repository at {} is owned by another user; git (and abtrack) refuse to use it", p.string()),
                      fmt::format("if you trust it: git config --global --add safe.directory {}", p.string()));
        break;
      }
      if (p == p.parent_path()) break;
    }
    throw Error(Exit::environment, fmt::format("not in a git repository: {}", start.string()),
                "run abtrack inside a git work tree (git init creates one)");
  }
  if (rc < 0) {
    if (msg.find("extension") != std::string::npos)
      throw Error(Exit::environment, "the repository uses a git extension that abtrack (libgit2 1.5) does not support: " + msg,
                  msg.find("worktreeconfig") != std::string::npos
                      ? "if nothing relies on per-worktree config: git config --unset extensions.worktreeConfig; otherwise run abtrack in a clone"
                      : "abtrack cannot commit safely here; run it in a clone without that extension");
    throw Error(Exit::environment, "cannot open the git repository: " + msg);
  }
  if (git_repository_is_bare(repo)) {
    git_repository_free(repo);
    throw Error(Exit::environment, "the repository is bare; abtrack needs a work tree");
  }
  freeze_config(repo);
  // The index, read here: a split index (git update-index --split-index, core.splitIndex: the
  // mandatory 'link' extension, which libgit2 1.5 cannot read) or a damaged one is refused
  // before anything runs, not as a status error later. The repository keeps what libgit2 read,
  // so a status walk reads the file again only when it has changed.
  Repository out(repo);
  Index index;
  if (git_repository_index(index.out(), repo) < 0) throw index_error(repo);
  return out;
}

std::optional<std::string> Repository::head() const {
  auto tip = read_tip(m_repo);
  if (!tip.oid) return std::nullopt;
  return hex(*tip.oid);
}

bool Repository::head_contains(const std::string& commit) const {
  auto tip = read_tip(m_repo);
  git_oid want;
  if (!tip.oid || git_oid_fromstrn(&want, commit.data(), commit.size()) != 0 || commit.size() != GIT_OID_HEXSZ) return false;
  if (git_oid_equal(&*tip.oid, &want)) return true;
  return git_graph_descendant_of(m_repo, &*tip.oid, &want) == 1;
}

bool Repository::head_detached() const { return git_repository_head_detached(m_repo) == 1; }

namespace {
// Whether trees `a` and `b` (at `prefix`) match outside the `data` paths: entries are compared by
// id, and only a folder that holds a data path is walked into.
bool trees_match_except(git_repository* repo, const git_tree* a, const git_tree* b, const std::string& prefix,
                        const std::vector<std::string>& data) {
  auto is_data = [&](const std::string& p) { return std::find(data.begin(), data.end(), p) != data.end(); };
  auto holds_data = [&](const std::string& p) {
    return std::any_of(data.begin(), data.end(), [&](const std::string& d) { return d.starts_with(p + "/"); });
  };
  auto check = [&](const git_tree* x, const git_tree* y) {  // every entry of x is in y, the same
    for (std::size_t i = 0, n = git_tree_entrycount(x); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(x, i);
      const std::string path = prefix + git_tree_entry_name(e);
      if (is_data(path)) continue;
      const git_tree_entry* f = git_tree_entry_byname(y, git_tree_entry_name(e));
      if (!f) return false;
      if (git_oid_equal(git_tree_entry_id(e), git_tree_entry_id(f)) && git_tree_entry_filemode(e) == git_tree_entry_filemode(f))
        continue;
      if (!holds_data(path) || git_tree_entry_type(e) != GIT_OBJECT_TREE || git_tree_entry_type(f) != GIT_OBJECT_TREE) return false;
      Tree sx, sy;
      if (git_tree_lookup(sx.out(), repo, git_tree_entry_id(e)) != 0 || git_tree_lookup(sy.out(), repo, git_tree_entry_id(f)) != 0)
        return false;
      if (!trees_match_except(repo, sx.get(), sy.get(), path + "/", data)) return false;
    }
    return true;
  };
  // Both ways round: an entry only in b is a difference too (folders are compared twice, cheaply).
  return check(a, b) && check(b, a);
}
}  // namespace

bool Repository::same_tree_except(const std::string& a, const std::string& b, const std::vector<std::string>& data) const {
  git_oid ia, ib;
  if (git_oid_fromstr(&ia, a.c_str()) != 0 || git_oid_fromstr(&ib, b.c_str()) != 0) return false;
  Tree ta, tb;
  try {
    ta.reset(tree_of(m_repo, ia));
    tb.reset(tree_of(m_repo, ib));
  } catch (const Error&) {
    return false;  // a commit this repository does not have
  }
  if (!ta.get() || !tb.get()) return false;
  if (git_oid_equal(git_tree_id(ta.get()), git_tree_id(tb.get()))) return true;
  return trees_match_except(m_repo, ta.get(), tb.get(), "", data);
}

bool Repository::ref_points_elsewhere(const std::string& ref, const std::string& target) const {
  git_oid id;
  if (git_reference_name_to_id(&id, m_repo, ref.c_str()) != 0) return false;
  return hex(id) != target;
}

git_tree* Repository::head_tree(std::optional<std::string>& commit) const {
  auto tip = read_tip(m_repo);
  commit = tip.oid ? std::optional<std::string>(hex(*tip.oid)) : std::nullopt;
  return tree_of(m_repo, tip.oid);
}


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
    opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
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
    if (name.empty() || name == ".git" || std::find(leave_out.begin(), leave_out.end(), name) != leave_out.end()) return;
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
  for (std::size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) add(git_index_get_byindex(index.get(), i)->path);
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
  opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS | GIT_STATUS_OPT_EXCLUDE_SUBMODULES |
               GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
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
    if (std::find(watched.begin(), watched.end(), path) != watched.end()) scan.watched.push_back(PathStatus{path, short_status(flags)});
    else if (!in_path_set(pass_over, path)) scan.other_changes = true;
    return false;
  });
  return scan;
}

bool Repository::dirty(const std::vector<std::string>& leave_out, const PathSet& pass_over) const {
  bool any = false;
  walk_status(walk_paths(leave_out, {}), [&](const char* path, unsigned) { return any = !in_path_set(pass_over, path); });
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

std::string Repository::tree_without(const std::optional<std::string>& commit, const std::vector<std::string>& data) const {
  git_oid empty;
  check_git(git_oid_fromstr(&empty, "4b825dc642cb6eb9a060e54bf8d69288fbee4904"), "naming the empty tree");
  if (!commit) return hex(empty);
  Tree tree(tree_of(m_repo, parse_oid(*commit)));
  std::vector<std::string> present;
  for (const auto& p : data) {
    std::string path = p.ends_with('/') ? p.substr(0, p.size() - 1) : p;
    TreeEntry e;
    if (path.empty() || git_tree_entry_bypath(e.out(), tree.get(), path.c_str()) != 0) {
      git_error_clear();
      continue;
    }
    // A folder named and a path inside it: removing the folder removes both.
    if (std::find(present.begin(), present.end(), path) == present.end()) present.push_back(std::move(path));
  }
  std::sort(present.begin(), present.end());
  std::vector<git_tree_update> updates;
  for (std::size_t i = 0; i < present.size(); ++i) {
    if (i > 0 && present[i].starts_with(present[i - 1] + "/")) continue;
    git_tree_update u{};
    u.action = GIT_TREE_UPDATE_REMOVE;
    u.path = present[i].c_str();
    updates.push_back(u);
  }
  if (updates.empty()) return hex(*git_tree_id(tree.get()));
  git_oid id;
  check_git(git_tree_create_updated(&id, m_repo, tree.get(), updates.size(), updates.data()), "computing the code's identity");
  return hex(id);
}

namespace {

// Whether the commit's message has a trailer `key`.
bool has_trailer(git_commit* c, std::string_view key) {
  git_message_trailer_array arr{};
  const char* msg = git_commit_message(c);
  if (!msg || git_message_trailers(&arr, msg) != 0) {
    git_error_clear();
    return false;
  }
  bool found = false;
  for (std::size_t i = 0; i < arr.count && !found; ++i) found = key == arr.trailers[i].key;
  git_message_trailer_array_free(&arr);
  return found;
}

}  // namespace

std::optional<std::string> Repository::resolve_in_user_history(const std::string& spec, std::string_view own) const {
  const auto cut = spec.find_first_of("~^");
  if (spec.find("@{") != std::string::npos || spec.find("^{") != std::string::npos || spec.find(':') != std::string::npos)
    return resolve(spec);
  auto base = resolve(spec.substr(0, cut));
  if (!base) return std::nullopt;
  git_oid at = parse_oid(*base);
  // The user's commit at `at`: down the first parents past abtrack's own commits.
  auto users = [&]() -> bool {
    for (;;) {
      Commit c;
      if (git_commit_lookup(c.out(), m_repo, &at) != 0) {
        git_error_clear();
        return false;
      }
      if (!has_trailer(c.get(), own) || git_commit_parentcount(c.get()) == 0) return true;
      at = *git_commit_parent_id(c.get(), 0);
    }
  };
  auto parent = [&](unsigned n) -> bool {
    if (n == 0) return true;
    Commit c;
    if (git_commit_lookup(c.out(), m_repo, &at) != 0 || git_commit_parentcount(c.get()) < n) {
      git_error_clear();
      return false;
    }
    at = *git_commit_parent_id(c.get(), n - 1);
    return true;
  };
  if (!users()) return std::nullopt;
  for (std::size_t i = cut; i < spec.size();) {
    const char op = spec[i++];
    std::size_t digits = i;
    while (digits < spec.size() && std::isdigit(static_cast<unsigned char>(spec[digits]))) ++digits;
    if (op != '~' && op != '^') return std::nullopt;
    if (digits - i > 6) return std::nullopt;
    const unsigned n = digits == i ? 1u : static_cast<unsigned>(std::stoul(spec.substr(i, digits - i)));
    i = digits;
    if (op == '^') {
      if (!parent(n) || !users()) return std::nullopt;
    } else {
      for (unsigned k = 0; k < n; ++k)
        if (!parent(1) || !users()) return std::nullopt;
    }
  }
  return hex(at);
}

std::optional<std::string> Repository::resolve(const std::string& spec) const {
  git_object* obj = nullptr;
  if (spec.empty() || git_revparse_single(&obj, m_repo, spec.c_str()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git_object* commit = nullptr;
  int rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
  git_object_free(obj);
  if (rc != 0) {
    git_error_clear();
    return std::nullopt;
  }
  std::string out = hex(*git_object_id(commit));
  git_object_free(commit);
  return out;
}

std::optional<std::vector<std::string>> Repository::first_parent_path(const std::string& good, const std::string& bad) const {
  const git_oid stop = parse_oid(good);
  std::vector<std::string> out;
  git_oid at = parse_oid(bad);
  while (!git_oid_equal(&at, &stop)) {
    Commit c;
    check_git(git_commit_lookup(c.out(), m_repo, &at), "reading " + hex(at));
    out.push_back(hex(at));
    if (git_commit_parentcount(c.get()) == 0) return std::nullopt;
    at = *git_commit_parent_id(c.get(), 0);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string Repository::subject(const std::string& commit) const {
  git_oid id;
  Commit c;
  if (git_oid_fromstr(&id, commit.c_str()) != 0 || git_commit_lookup(c.out(), m_repo, &id) != 0) {
    git_error_clear();
    return {};
  }
  const char* s = git_commit_summary(c.get());
  return s ? s : "";
}

std::string Repository::snapshot(const std::string& message, const std::optional<std::string>& parent,
                                 const PathSet& keep) const {
  // A second handle, so the index we fill is never the one the user's git sees; it is never
  // written.
  Repo second;
  check_git(git_repository_open(second.out(), git_repository_path(m_repo)), "opening the repository for a snapshot");
  freeze_config(second.get());
  // Opened from the git dir, the handle usually finds the same work tree already; libgit2 1.5's
  // set_workdir leaks its path buffer when asked for the one it has.
  const char* found = git_repository_workdir(second.get());
  if (!found || fs::path(found).lexically_normal() != (m_workdir / "").lexically_normal())
    check_git(git_repository_set_workdir(second.get(), m_workdir.c_str(), 0), "opening the work tree for a snapshot");
  Index index;
  check_git(git_repository_index(index.out(), second.get()), "reading the index for a snapshot");
  check_git(retry_while_files_change([&] { return git_index_update_all(index.get(), nullptr, nullptr, nullptr); }),
            "adding tracked changes to the snapshot");
  char star[] = "*";
  char* specs[] = {star};
  git_strarray all = {specs, 1};
  struct Skip {
    fs::path root;
    const PathSet& keep;
  } skip{m_workdir, keep};
  auto skip_large = [](const char* path, const char*, void* payload) -> int {
    // A nested git repository comes as its folder ("vendor/dep/"), which an index cannot hold
    // (git makes it a gitlink): left out, like huge build outputs (>0 skips). Data and outputs
    // are never read: they come from the parent below.
    const auto* s = static_cast<const Skip*>(payload);
    if (std::string_view(path).ends_with('/') || in_path_set(s->keep, path) || util::is_atomic_temp(path)) return 1;
    std::error_code ec;
    auto size = fs::file_size(s->root / path, ec);
    return (!ec && size > (64u << 20)) ? 1 : 0;
  };
  check_git(retry_while_files_change([&] { return git_index_add_all(index.get(), &all, GIT_INDEX_ADD_DEFAULT, skip_large, &skip); }),
            "adding untracked files to the snapshot");
  Commit parent_commit;
  const git_commit* parents[1] = {nullptr};
  std::size_t n = 0;
  git_time_t when = 0;
  Tree parent_tree;
  if (parent) {
    git_oid pid = parse_oid(*parent);
    check_git(git_commit_lookup(parent_commit.out(), m_repo, &pid), "reading " + *parent);
    parents[0] = parent_commit.get();
    n = 1;
    when = git_commit_time(parent_commit.get());
    check_git(git_commit_tree(parent_tree.out(), parent_commit.get()), "reading the tree of " + *parent);
  }
  // The kept paths leave the index, then come back as the parent has them (below), so the
  // snapshot's diff against its parent shows only code.
  for (const auto& p : keep) {
    if (!p.empty() && p.back() == '/')
      check_git(git_index_remove_directory(index.get(), p.substr(0, p.size() - 1).c_str(), 0), "leaving " + p + " out of the snapshot");
    else if (git_index_get_bypath(index.get(), p.c_str(), 0))
      check_git(git_index_remove_bypath(index.get(), p.c_str()), "leaving " + p + " out of the snapshot");
  }
  git_oid tree_id;
  check_git(git_index_write_tree_to(&tree_id, index.get(), m_repo), "writing the snapshot tree");
  Tree tree;
  check_git(git_tree_lookup(tree.out(), m_repo, &tree_id), "reading the snapshot tree");
  std::vector<std::string> kept_paths;
  std::vector<git_tree_update> updates;
  for (const auto& p : keep) {
    std::string path = p.ends_with('/') ? p.substr(0, p.size() - 1) : p;
    TreeEntry e;
    if (!parent_tree.get() || path.empty() || git_tree_entry_bypath(e.out(), parent_tree.get(), path.c_str()) != 0) {
      git_error_clear();
      continue;
    }
    git_tree_update u{};
    u.action = GIT_TREE_UPDATE_UPSERT;
    git_oid_cpy(&u.id, git_tree_entry_id(e.get()));
    u.filemode = git_tree_entry_filemode(e.get());
    kept_paths.push_back(path);
    updates.push_back(u);
  }
  for (std::size_t i = 0; i < updates.size(); ++i) updates[i].path = kept_paths[i].c_str();
  if (!updates.empty()) {
    check_git(git_tree_create_updated(&tree_id, m_repo, tree.get(), updates.size(), updates.data()),
              "putting the data back in the snapshot tree");
    tree.reset(nullptr);
    check_git(git_tree_lookup(tree.out(), m_repo, &tree_id), "reading the snapshot tree");
  }
  // A fixed identity and time: the same code gives the same snapshot id, so runs on the same
  // edits share a code identity (and pool their samples).
  Signature sig;
  check_git(git_signature_new(sig.out(), "abtrack", "abtrack@localhost", when, 0), "making the snapshot signature");
  git_oid id;
  check_git(git_commit_create(&id, m_repo, nullptr, sig.get(), sig.get(), nullptr, message.c_str(), tree.get(), n, parents),
            "creating the snapshot commit");
  return hex(id);
}

namespace {
HistoryEntry entry_of(git_commit* c) {
  HistoryEntry e;
  e.commit = hex(*git_commit_id(c));
  if (git_commit_parentcount(c) > 0) e.first_parent = hex(*git_commit_parent_id(c, 0));
  e.time = git_commit_time(c);
  const char* summary = git_commit_summary(c);
  e.subject = summary ? summary : "";
  git_message_trailer_array arr{};
  if (const char* msg = git_commit_message(c); msg && git_message_trailers(&arr, msg) == 0) {
    for (std::size_t i = 0; i < arr.count; ++i) e.trailers.emplace_back(arr.trailers[i].key, arr.trailers[i].value);
    git_message_trailer_array_free(&arr);
  }
  return e;
}
}  // namespace

std::optional<HistoryEntry> Repository::head_entry() const {
  auto tip = read_tip(m_repo);
  if (!tip.oid) return std::nullopt;
  Commit c;
  check_git(git_commit_lookup(c.out(), m_repo, &*tip.oid), "reading HEAD");
  return entry_of(c.get());
}

std::optional<HistoryEntry> Repository::entry(const std::string& commit) const {
  git_oid id;
  Commit c;
  if (commit.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, commit.c_str()) != 0 || git_commit_lookup(c.out(), m_repo, &id) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  return entry_of(c.get());
}

void Repository::check_identity() const { Signature s(make_signature(m_repo, "COMMITTER")); }

fs::path Repository::state_dir() const {
  fs::path dir = fs::path(git_repository_commondir(m_repo)) / "abtrack";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir;
}

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
  std::optional<git_oid> old_tip;
  Tree old_tree;
  std::string ref_name;
  int last_rc = 0;
  for (int attempt = 1;; ++attempt) {
    auto tip = read_tip(m_repo);
    ref_name = tip.ref;
    old_tip = tip.oid;
    old_tree.reset(tree_of(m_repo, tip.oid));
    TreeView view(m_repo, old_tree.get(), tip.oid ? std::optional<std::string>(hex(*tip.oid)) : std::nullopt);
    change = build(view);
    if (change.skip) return result;  // result.commit stays empty

    std::vector<git_tree_update> updates;
    // git_odb_write hashes first and writes only a blob the repository lacks, as `git add` does
    // (git_blob_create_from_buffer streams every blob through a temporary file, even a known one).
    Odb odb;
    check_git(git_repository_odb(odb.out(), m_repo), "opening the object database");
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
    check_git(git_tree_create_updated(&tree_id, m_repo, old_tree.get(), updates.size(), updates.data()), "building the tree");
    util::trace("trees written");
    Tree tree;
    check_git(git_tree_lookup(tree.out(), m_repo, &tree_id), "reading the new tree");
    Commit parent;
    const git_commit* parents[1] = {nullptr};
    std::size_t n = 0;
    if (tip.oid) {
      check_git(git_commit_lookup(parent.out(), m_repo, &*tip.oid), "reading HEAD");
      parents[0] = parent.get();
      n = 1;
    }
    git_oid id;
    check_git(git_commit_create(&id, m_repo, nullptr, author.get(), committer.get(), nullptr, change.message.c_str(),
                                tree.get(), n, parents),
              "creating the commit");
    // Compare-and-swap: move the ref only if it still points where we built on.
    std::string subject = change.message.substr(0, change.message.find('\n'));
    std::string reflog = "commit: " + subject;
    // The sync marker (see finish_interrupted_sync) also names, as absolute paths, the git locks
    // this invocation takes while it exists: the branch's and the index's. A lock left by a kill
    // inside that window is ours, and remove_stale_locks knows it from the marker's time.
    std::string marker = hex(id) + "\n";
    for (const auto& f : change.files) marker += f.first + "\n";
    marker += (ref_name == "HEAD" ? fs::path(git_repository_path(m_repo)) / "HEAD.lock"
                                  : fs::path(git_repository_commondir(m_repo)) / (ref_name + ".lock"))
                  .string() +
              "\n";
    marker += (fs::path(git_repository_path(m_repo)) / "index.lock").string() + "\n";
    write_sync_marker(marker);
    Reference ref;
    int rc = tip.oid ? git_reference_create_matching(ref.out(), m_repo, ref_name.c_str(), &id, 1, &*tip.oid, reflog.c_str())
                     : git_reference_create(ref.out(), m_repo, ref_name.c_str(), &id, 0, reflog.c_str());
    util::trace("commit object written");
    if (rc == 0) {
      result.commit = hex(id);
      result.attempts = attempt;
      break;
    }
    // The ref did not move: nothing to sync, and a lock that made it fail is someone else's.
    clear_sync_marker();
    if (rc != GIT_EMODIFIED && rc != GIT_ELOCKED && rc != GIT_EEXISTS) check_git(rc, "updating " + ref_name);
    last_rc = rc;
    if (attempt >= kMaxAttempts) {
      std::string lockfile = (fs::path(git_repository_commondir(m_repo)) / (ref_name + ".lock")).string();
      if (ref_name == "HEAD") lockfile = (fs::path(git_repository_path(m_repo)) / "HEAD.lock").string();
      if (last_rc == GIT_ELOCKED)
        throw Error(Exit::environment, fmt::format("{} stayed locked through {} attempts: {}", ref_name, attempt, lockfile),
                    "if no git process is running, remove that lock file");
      throw Error(Exit::environment, fmt::format("{} kept moving; gave up after {} attempts", ref_name, attempt));
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

void Repository::sync_removals(git_tree* before_tree, const std::vector<std::string>& paths, std::vector<std::string>& kept_edits) const {
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
        return fmt::format("updating the index for the removal of {} (`git reset -- {}` re-syncs it)", fmt::join(paths, ", "),
                           fmt::join(paths, " "));
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
std::string filtered(git_repository* repo, const std::string& path, const std::string& content, git_filter_mode_t mode) {
  git_filter_list* filters = nullptr;
  if (git_filter_list_load(&filters, repo, nullptr, path.c_str(), mode, GIT_FILTER_DEFAULT) != 0 || !filters) return content;
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
    const auto previous_checked_out = previous ? std::optional<std::string>(to_work_tree(path, *previous)) : std::nullopt;
    git_oid id{};
    check_git(git_odb_hash(&id, content.data(), content.size(), GIT_OBJECT_BLOB), "hashing " + path);
    if (current && *current != want && current != previous_checked_out) {
      // Edited while we ran (or a file of the user's where the commit put one): the user's text
      // wins in the work tree (its index entry is seen to below).
      kept_edits.push_back(path);
      Kept& k = kept.emplace_back(Kept{path, id, std::nullopt});
      if (previous) check_git(git_odb_hash(&k.was.emplace(), previous->data(), previous->size(), GIT_OBJECT_BLOB), "hashing " + path);
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
        for (const auto& entry : written) check_git(git_index_add(index, &entry), fmt::format("adding {} to the index", entry.path));
        return !written.empty() || !index_only.empty();
      },
      [&] {
        std::vector<std::string> synced;
        for (const auto& entry : written) synced.emplace_back(entry.path);
        synced.insert(synced.end(), index_only.begin(), index_only.end());
        return fmt::format("updating the index for {} (the commit {} is made; `git reset -- {}` re-syncs it)", fmt::join(synced, ", "),
                           commit.substr(0, 12), fmt::join(synced, " "));
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
      throw Error(Exit::environment,
                  fmt::format("cannot copy {} to {}: {}", m_index.string(), m_next.string(), ec ? ec.message() : std::strerror(errno)));
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

void Repository::update_index(const std::function<bool(git_index*)>& edit, const std::function<std::string()>& what) const {
  for (int attempt = 1;; ++attempt) {
    bool done = false;
    try {
      done = try_update_index(edit);
    } catch (Error& e) {
      throw e.context(what());
    }
    if (done) {
      util::trace("index written");
      return;
    }
    if (attempt >= 100)
      throw Error(Exit::environment,
                  fmt::format("{}: {} stayed locked", what(), (fs::path(git_repository_path(m_repo)) / "index.lock").string()),
                  "if no git process is running, remove that lock file");
    backoff(attempt);
  }
}

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
    throw Error(Exit::environment, fmt::format("cannot write {}: {}", marker.string(), std::strerror(n < 0 ? err : ENOSPC)));
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
  std::string content;
  try {
    content = util::read_file(marker);
  } catch (const Error&) {
    return lines;
  }
  for (std::size_t at = 0, nl; (nl = content.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(content.substr(at, nl - at));  // whole lines only
  return lines;
}

// A lock taken within seconds of `note`'s modification time (the killed process's own): a lock a
// user's git took later is left alone.
static void remove_lock_taken_near(const fs::path& note, const std::string& lock) {
  struct stat note_st {}, lock_st {};
  std::error_code ec;
  if (!lock.empty() && ::stat(note.c_str(), &note_st) == 0 && ::stat(lock.c_str(), &lock_st) == 0 &&
      lock_st.st_mtime >= note_st.st_mtime - 1 && lock_st.st_mtime <= note_st.st_mtime + 5)
    fs::remove(lock, ec);
}

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

std::vector<HistoryEntry> Repository::history(const std::string& key) const {
  std::vector<HistoryEntry> out;
  if (!read_tip(m_repo).oid) return out;
  Revwalk walk;
  check_git(git_revwalk_new(walk.out(), m_repo), "walking the history");
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
  check_git(git_revwalk_push_head(walk.get()), "walking the history");
  git_oid oid;
  while (git_revwalk_next(&oid, walk.get()) == 0) {
    Commit c;
    check_git(git_commit_lookup(c.out(), m_repo, &oid), "reading a commit");
    const char* msg = git_commit_message(c.get());
    if (!key.empty() && (!msg || !std::strstr(msg, key.c_str()))) continue;
    HistoryEntry e;
    git_message_trailer_array arr{};
    if (msg && git_message_trailers(&arr, msg) == 0) {
      for (std::size_t i = 0; i < arr.count; ++i) e.trailers.emplace_back(arr.trailers[i].key, arr.trailers[i].value);
      git_message_trailer_array_free(&arr);
    }
    if (!key.empty() && e.trailer(key).empty()) continue;
    e.commit = hex(oid);
    if (git_commit_parentcount(c.get()) > 0) e.first_parent = hex(*git_commit_parent_id(c.get(), 0));
    e.time = git_commit_time(c.get());
    const char* summary = git_commit_summary(c.get());
    e.subject = summary ? summary : "";
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace abtrack::gitstore
