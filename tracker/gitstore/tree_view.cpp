// TreeView: read access to the tree of one commit, as a commit's builder sees the tip.
#include "gitstore/repository.hpp"

#include <fmt/format.h>
#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

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

}  // namespace abtrack::gitstore
