// What gitstore's sources share (internal.hpp): libgit2's start-up, object ids, HEAD,
// the configuration, signatures, status flags, retries and libgit2's errors.
#include "gitstore/repository.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <git2.h>
#include <git2/sys/repository.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

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

Expected<git_tree*> try_tree_of(git_repository* repo, const std::optional<git_oid>& commit_id) {
  if (!commit_id) return nullptr;
  Commit c;
  if (auto found = git_result(git_commit_lookup(c.out(), repo, &*commit_id), "reading the HEAD commit"); !found)
    return found.failure();
  git_tree* t = nullptr;
  if (auto read = git_result(git_commit_tree(&t, c.get()), "reading the HEAD tree"); !read) return read.failure();
  return t;
}

git_tree* tree_of(git_repository* repo, const std::optional<git_oid>& commit_id) {
  return try_tree_of(repo, commit_id).value_or_throw();
}

namespace {
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v && *v) return std::string(v);
  return std::nullopt;
}
}  // namespace

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

// The environment first, as git does: libgit2's own default signature ignores it.
git_signature* make_signature(git_repository* repo, const char* who) {
  auto name = env(fmt::format("GIT_{}_NAME", who).c_str());
  auto email = env(fmt::format("GIT_{}_EMAIL", who).c_str());
  if (!name) name = config_string(repo, "user.name");
  if (!email) email = config_string(repo, "user.email");
  if (!name || !email)
    throw Error(Exit::environment, fmt::format("no git identity: {} is not set", !name ? "user.name" : "user.email"),
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

Error index_error(git_repository* repo) {
  const std::string why = last_git_message();
  const std::string where = (fs::path(git_repository_path(repo)) / "index").string();
  if (why.find("'link'") != std::string::npos)
    return Error(
        Exit::environment,
        fmt::format("the index {} is split (git update-index --split-index), which abtrack (libgit2 1.5) cannot read",
                    where),
        "unsplit it: git update-index --no-split-index (and git config core.splitIndex false if it is set)");
  return Error(
      Exit::environment, fmt::format("cannot read the index {}: {}", where, why),
      why.find("checksum") != std::string::npos
          ? "the file is damaged (git does not check its checksum when it reads it): `git status` shows what git "
            "makes of it, and `git update-index --really-refresh` writes it again from what git read"
          : std::string());
}

void free_tree(git_tree* tree) {
  if (tree) git_tree_free(tree);
}

Expected<> git_result(int rc, const std::string& what) {
  if (rc < 0) return Failure(fmt::format("{}: {}", what, last_git_message()));
  return {};
}

void check_git(int rc, const std::string& what) { git_result(rc, what).value_or_throw(); }

}  // namespace abtrack::gitstore
