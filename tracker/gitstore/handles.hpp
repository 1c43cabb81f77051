#pragma once
// RAII for libgit2 objects (gitstore's own sources only).
#include <git2.h>

namespace abtrack::gitstore {

template <class T, void (*Free)(T*)>
struct Owned {
  T* p = nullptr;
  Owned() = default;
  explicit Owned(T* x) : p(x) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (p) Free(p);
  }
  T** out() { return &p; }
  void reset(T* x) {
    if (p) Free(p);
    p = x;
  }
  T* get() const { return p; }
};
using Tree = Owned<git_tree, git_tree_free>;
using Commit = Owned<git_commit, git_commit_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Index = Owned<git_index, git_index_free>;
using Signature = Owned<git_signature, git_signature_free>;
using Blob = Owned<git_blob, git_blob_free>;
using StatusList = Owned<git_status_list, git_status_list_free>;
using Revwalk = Owned<git_revwalk, git_revwalk_free>;
using Config = Owned<git_config, git_config_free>;
using Repo = Owned<git_repository, git_repository_free>;
using TreeEntry = Owned<git_tree_entry, git_tree_entry_free>;
using Odb = Owned<git_odb, git_odb_free>;
using Worktree = Owned<git_worktree, git_worktree_free>;
using Submodule = Owned<git_submodule, git_submodule_free>;

}  // namespace abtrack::gitstore
