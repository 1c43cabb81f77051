// Opening a repository (Repository::discover and the refusals it makes) and what it says of
// HEAD, the committer and abtrack's own folder.
#include "gitstore/repository.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

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
    if (auto a = msg.find('\''), b = msg.find('\'', a + 1); a != std::string::npos && b != std::string::npos)
      path = msg.substr(a + 1, b - a - 1);
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    throw Error(Exit::environment,
                fmt::format("the repository at {} is owned by another user; git (and abtrack) refuse to use it", path),
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
                      fmt::format("the repository at {} is owned by another user; git (and abtrack) refuse to use it",
                                  p.string()),
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
      throw Error(
          Exit::environment, "the repository uses a git extension that abtrack (libgit2 1.5) does not support: " + msg,
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
  if (!tip.oid || git_oid_fromstrn(&want, commit.data(), commit.size()) != 0 || commit.size() != GIT_OID_HEXSZ)
    return false;
  if (git_oid_equal(&*tip.oid, &want)) return true;
  return git_graph_descendant_of(m_repo, &*tip.oid, &want) == 1;
}

bool Repository::head_detached() const { return git_repository_head_detached(m_repo) == 1; }

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

void Repository::check_identity() const { Signature s(make_signature(m_repo, "COMMITTER")); }

fs::path Repository::state_dir() const {
  fs::path dir = fs::path(git_repository_commondir(m_repo)) / "abtrack";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir;
}

}  // namespace abtrack::gitstore
