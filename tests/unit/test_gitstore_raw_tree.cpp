#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <git2.h>

#include "git_scratch.hpp"
#include "gitstore/raw_tree.hpp"
#include "gitstore/repository.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

// A scratch repository whose object database libgit2's tree builder writes into, so that
// raw_tree_with_files can be compared with it byte for byte.
struct Repo {
  fs::path dir = fs::temp_directory_path() / fmt::format("abtrack-unit-rawtree-{}", std::random_device{}());
  git_repository* repo = nullptr;
  git_odb* odb = nullptr;
  Repo() {
    git_libgit2_init();
    REQUIRE(git_repository_init(&repo, dir.c_str(), 0) == 0);
    REQUIRE(git_repository_odb(&odb, repo) == 0);
  }
  ~Repo() {
    git_odb_free(odb);
    git_repository_free(repo);
    // libgit2 stays initialised, as in abtrack (a shutdown to zero would run its global set-up
    // again later in this process, which the start-up tests count).
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  git_oid blob(const std::string& content) {
    git_oid id;
    REQUIRE(git_blob_create_from_buffer(&id, repo, content.data(), content.size()) == 0);
    return id;
  }
  // A tree built by libgit2 from (name, id, mode) entries.
  git_oid tree(const std::vector<std::tuple<std::string, git_oid, git_filemode_t>>& entries) {
    git_treebuilder* b = nullptr;
    REQUIRE(git_treebuilder_new(&b, repo, nullptr) == 0);
    for (const auto& [name, id, mode] : entries) REQUIRE(git_treebuilder_insert(nullptr, b, name.c_str(), &id, mode) == 0);
    git_oid out;
    REQUIRE(git_treebuilder_write(&out, b) == 0);
    git_treebuilder_free(b);
    return out;
  }
  std::string raw(const git_oid& id) {
    git_odb_object* o = nullptr;
    REQUIRE(git_odb_read(&o, odb, &id) == 0);
    std::string s(static_cast<const char*>(git_odb_object_data(o)), git_odb_object_size(o));
    git_odb_object_free(o);
    return s;
  }
};

gitstore::RawBlob raw_blob(const std::string& name, const git_oid& id) {
  gitstore::RawBlob f;
  f.name = name;
  std::memcpy(f.id.data(), id.id, 20);
  return f;
}

}  // namespace

TEST_CASE("raw_tree_with_files writes the bytes libgit2's tree builder writes") {
  Repo r;
  const git_oid a = r.blob("a\n"), b = r.blob("b\n"), c = r.blob("c\n");
  const git_oid sub = r.tree({{"inner", a, GIT_FILEMODE_BLOB}});
  // Names chosen to meet git's ordering rules: prefixes, '-' and '.' (before '/'), '0' (after
  // it), a folder whose name a file's extends, and run numbers past 9999.
  std::vector<std::tuple<std::string, git_oid, git_filemode_t>> base = {
      {"0001.json", a, GIT_FILEMODE_BLOB}, {"0002.json", b, GIT_FILEMODE_BLOB}, {"9999.json", a, GIT_FILEMODE_BLOB},
      {"x", sub, GIT_FILEMODE_TREE},       {"x-y", a, GIT_FILEMODE_BLOB},       {"x.y", b, GIT_FILEMODE_BLOB},
      {"x0", a, GIT_FILEMODE_BLOB},        {"run", a, GIT_FILEMODE_BLOB_EXECUTABLE}, {"link", b, GIT_FILEMODE_LINK}};
  const std::string before = r.raw(r.tree(base));
  CHECK(gitstore::raw_tree_entries(before) == base.size());

  struct Case {
    std::vector<std::string> names;  // the files added (or replaced), each with blob c
  };
  const std::vector<Case> cases = {
      {{"10000.json"}},              // past every entry but "x..." ones: lands in the middle
      {{"0003.json"}},               // between two runs
      {{"0000.json"}},               // first
      {{"zzz"}},                     // last
      {{"x.a", "x/"}},               // refused below: not plain
      {{"0002.json"}},               // replaces a file
      {{"x-", "x.z", "x1", "a b"}},  // several at once, around the folder "x"
  };
  for (const auto& cs : cases) {
    std::vector<gitstore::RawBlob> files;
    bool plain = true;
    for (const auto& n : cs.names) {
      files.push_back(raw_blob(n, c));
      plain = plain && n.find('/') == std::string::npos;
    }
    auto got = gitstore::raw_tree_with_files(before, files);
    if (!plain) {
      CHECK_FALSE(got.has_value());
      continue;
    }
    REQUIRE(got.has_value());
    auto expected = base;
    for (const auto& n : cs.names) {
      auto it = std::find_if(expected.begin(), expected.end(), [&](const auto& e) { return std::get<0>(e) == n; });
      if (it != expected.end()) *it = {n, c, GIT_FILEMODE_BLOB};
      else expected.emplace_back(n, c, GIT_FILEMODE_BLOB);
    }
    CHECK_MESSAGE(*got == r.raw(r.tree(expected)), fmt::format("adding {}", fmt::join(cs.names, ", ")));
  }
}

TEST_CASE("raw_tree_with_files refuses what it does not handle, for libgit2 to do") {
  Repo r;
  const git_oid a = r.blob("a\n");
  const git_oid sub = r.tree({{"inner", a, GIT_FILEMODE_BLOB}});
  const std::string raw = r.raw(r.tree({{"f", a, GIT_FILEMODE_BLOB},
                                        {"exe", a, GIT_FILEMODE_BLOB_EXECUTABLE},
                                        {"dir", sub, GIT_FILEMODE_TREE}}));
  auto one = [&](const std::string& name) { return gitstore::raw_tree_with_files(raw, {raw_blob(name, a)}); };
  for (const char* bad : {"", ".", "..", ".git", "a/b"}) CHECK_FALSE(one(bad).has_value());
  CHECK_FALSE(one(std::string("a\0b", 3)).has_value());
  CHECK_FALSE(one("exe").has_value());  // an executable of that name
  CHECK_FALSE(one("dir").has_value());  // a folder of that name
  CHECK(one("g").has_value());
  CHECK_FALSE(gitstore::raw_tree_with_files(raw, {raw_blob("g", a), raw_blob("g", a)}).has_value());
  // Torn or foreign bytes.
  CHECK_FALSE(gitstore::raw_tree_with_files(raw.substr(0, raw.size() - 1), {raw_blob("g", a)}).has_value());
  CHECK_FALSE(gitstore::raw_tree_with_files("100644 f", {raw_blob("g", a)}).has_value());
  CHECK_FALSE(gitstore::raw_tree_entries("9x9 f").has_value());
  // Out of order (as no valid tree is): not this function's to repair.
  std::string swapped = r.raw(r.tree({{"b", a, GIT_FILEMODE_BLOB}})) + r.raw(r.tree({{"a", a, GIT_FILEMODE_BLOB}}));
  CHECK(gitstore::raw_tree_entries(swapped) == 2u);
  CHECK_FALSE(gitstore::raw_tree_with_files(swapped, {raw_blob("c", a)}).has_value());
  // An empty tree takes files.
  auto empty = gitstore::raw_tree_with_files("", {raw_blob("b", a), raw_blob("a", a)});
  REQUIRE(empty.has_value());
  CHECK(*empty == r.raw(r.tree({{"a", a, GIT_FILEMODE_BLOB}, {"b", a, GIT_FILEMODE_BLOB}})));
}

TEST_CASE("a commit into a large folder keeps every file, also with one deeper inside it") {
  GitScratch scratch("bigfolder");
  {
    auto repo = gitstore::Repository::discover(scratch.dir);
    auto commit = [&](std::vector<std::pair<std::string, std::string>> files) {
      repo.commit([&](const gitstore::TreeView&) {
        gitstore::Change c;
        c.message = "files\n";
        c.files = files;
        return c;
      });
    };
    std::vector<std::pair<std::string, std::string>> many;
    for (int i = 1; i <= 150; ++i) many.emplace_back(fmt::format("runs/x/{:04}.json", i), fmt::format("{}\n", i));
    commit(many);  // an empty tree before: libgit2 builds it
    commit({{"runs/x/0151.json", "151\n"}, {"runs/x/sub/deep.txt", "deep\n"}, {"AB.md", "doc\n"}});
    commit({{"runs/x/0152.json", "152\n"}, {"runs/x/0001.json", "one again\n"}});
    auto read = [&](const std::string& p) { return repo.with_head([&](const gitstore::TreeView& t) { return t.read(p); }); };
    CHECK(read("runs/x/0150.json") == std::string("150\n"));
    CHECK(read("runs/x/0151.json") == std::string("151\n"));
    CHECK(read("runs/x/sub/deep.txt") == std::string("deep\n"));
    CHECK(read("runs/x/0152.json") == std::string("152\n"));
    CHECK(read("runs/x/0001.json") == std::string("one again\n"));
    CHECK(read("AB.md") == std::string("doc\n"));
    CHECK(repo.with_head([](const gitstore::TreeView& t) { return t.list("runs/x").size(); }) == 152u);
  }
  // git agrees: the trees are well formed and the checkout matches.
  CHECK(scratch.git("fsck --strict --no-progress >/dev/null 2>&1"));
  CHECK(std::system(("test -z \"$(git -C " + scratch.quoted + " status --porcelain)\"").c_str()) == 0);
}
