// The code's trees: snapshots of the work tree, content identities (a tree without the data
// paths), and comparisons of two commits' code.
#include "gitstore/repository.hpp"

#include <algorithm>

#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

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
      if (git_oid_equal(git_tree_entry_id(e), git_tree_entry_id(f)) &&
          git_tree_entry_filemode(e) == git_tree_entry_filemode(f))
        continue;
      if (!holds_data(path) || git_tree_entry_type(e) != GIT_OBJECT_TREE || git_tree_entry_type(f) != GIT_OBJECT_TREE)
        return false;
      Tree sx, sy;
      if (git_tree_lookup(sx.out(), repo, git_tree_entry_id(e)) != 0 ||
          git_tree_lookup(sy.out(), repo, git_tree_entry_id(f)) != 0)
        return false;
      if (!trees_match_except(repo, sx.get(), sy.get(), path + "/", data)) return false;
    }
    return true;
  };
  // Both ways round: an entry only in b is a difference too (folders are compared twice, cheaply).
  return check(a, b) && check(b, a);
}
}  // namespace

bool Repository::same_tree_except(const std::string& a, const std::string& b,
                                  const std::vector<std::string>& data) const {
  git_oid ia, ib;
  if (git_oid_fromstr(&ia, a.c_str()) != 0 || git_oid_fromstr(&ib, b.c_str()) != 0) return false;
  Tree ta(try_tree_of(m_repo, ia).value_or(nullptr)), tb(try_tree_of(m_repo, ib).value_or(nullptr));
  if (!ta.get() || !tb.get()) return false;  // a commit this repository does not have
  if (git_oid_equal(git_tree_id(ta.get()), git_tree_id(tb.get()))) return true;
  return trees_match_except(m_repo, ta.get(), tb.get(), "", data);
}

std::string Repository::tree_without(const std::optional<std::string>& commit,
                                     const std::vector<std::string>& data) const {
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
  check_git(git_tree_create_updated(&id, m_repo, tree.get(), updates.size(), updates.data()),
            "computing the code's identity");
  return hex(id);
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
  check_git(retry_while_files_change(
                [&] { return git_index_add_all(index.get(), &all, GIT_INDEX_ADD_DEFAULT, skip_large, &skip); }),
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
      check_git(git_index_remove_directory(index.get(), p.substr(0, p.size() - 1).c_str(), 0),
                "leaving " + p + " out of the snapshot");
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
  check_git(
      git_commit_create(&id, m_repo, nullptr, sig.get(), sig.get(), nullptr, message.c_str(), tree.get(), n, parents),
      "creating the snapshot commit");
  return hex(id);
}

}  // namespace abtrack::gitstore
