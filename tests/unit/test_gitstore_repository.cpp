#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "git_scratch.hpp"
#include "gitstore/repository.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

TEST_CASE("a first commit on an unborn branch: committed, written to the work tree and to the index") {
  GitScratch scratch("git");
  auto repo = gitstore::Repository::discover(scratch.dir);
  auto done = repo.commit([](const gitstore::TreeView& tip) {
    CHECK_FALSE(tip.commit().has_value());  // an unborn branch
    gitstore::Change c;
    c.message = "first\n";
    c.files = {{"runs/x/0001.json", "{}\n"}};
    return c;
  });
  CHECK(done.commit.size() == 40);
  CHECK(repo.head() == done.commit);
  CHECK(repo.with_head([](const gitstore::TreeView& t) { return t.read("runs/x/0001.json"); }) == std::string("{}\n"));
  CHECK(util::read_file(scratch.dir / "runs/x/0001.json") == "{}\n");
  CHECK(repo.status({"runs/"}).empty());
}

namespace {
// What `git -C <scratch> ARGS` prints, without the trailing newline.
std::string git_output(const GitScratch& scratch, const std::string& args) {
  std::string out;
  FILE* p = ::popen(("git -C " + scratch.quoted + " " + args).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

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
    auto read = [&](const std::string& p) {
      return repo.with_head([&](const gitstore::TreeView& t) { return t.read(p); });
    };
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

TEST_CASE("a commit's index update keeps what the user staged, and leaves no file of its own") {
  GitScratch scratch("index");
  util::write_file_atomic(scratch.dir / "kept.txt", "a\n", util::Durability::ordinary);
  REQUIRE(scratch.git("add kept.txt && git -C " + scratch.quoted + " commit -qm first"));
  util::write_file_atomic(scratch.dir / "kept.txt", "b\n", util::Durability::ordinary);
  util::write_file_atomic(scratch.dir / "notes.txt", "n\n", util::Durability::ordinary);
  REQUIRE(scratch.git("add kept.txt notes.txt"));
  {
    auto repo = gitstore::Repository::discover(scratch.dir);
    auto done = repo.commit([](const gitstore::TreeView&) {
      gitstore::Change c;
      c.message = "run\n";
      c.files = {{"runs/x/0001.json", "{}\n"}, {"AB.md", "doc\n"}};
      return c;
    });
    CHECK(done.kept_edits.empty());
  }
  CHECK(git_output(scratch, "show --name-only --format= HEAD") == "AB.md\nruns/x/0001.json");
  CHECK(git_output(scratch, "status --porcelain") == "M  kept.txt\nA  notes.txt");
  CHECK(git_output(scratch, "show :kept.txt") == "b");
  // The index's cache tree agrees with its entries: git writes the same tree from an index
  // made of the entries alone.
  const std::string fresh = "GIT_INDEX_FILE=" + scratch.quoted + "/.git/fresh-index git -C " + scratch.quoted;
  CHECK(git_output(scratch, "write-tree") ==
        git_output(scratch, "ls-files -s | " + fresh + " update-index --index-info && " + fresh + " write-tree"));
  for (const char* name : {"index.lock", "abtrack-index", "abtrack-index.lock"})
    CHECK_FALSE(fs::exists(scratch.dir / ".git" / name));
}

TEST_CASE("a damaged index is refused when the repository is opened, with the repair") {
  GitScratch scratch("torn");
  util::write_file_atomic(scratch.dir / "f", "x\n", util::Durability::ordinary);
  REQUIRE(scratch.git("add f"));
  // One flipped bit in an entry: the trailer no longer matches.
  std::string index = util::read_file(scratch.dir / ".git/index");
  index[20] = static_cast<char>(index[20] ^ 1);
  util::write_file_atomic(scratch.dir / ".git/index", index, util::Durability::ordinary);
  try {
    (void)gitstore::Repository::discover(scratch.dir);
    FAIL("a damaged index was read");
  } catch (const Error& e) {
    CHECK(e.diagnostics().front().message.find("cannot read the index") != std::string::npos);
    CHECK(e.diagnostics().front().message.find("checksum") != std::string::npos);
    CHECK(e.diagnostics().front().hint.find("git update-index --really-refresh") != std::string::npos);
  }
  // The hint's repair: git reads the index and writes it again.
  REQUIRE(scratch.git("update-index --really-refresh >/dev/null"));
  CHECK(gitstore::Repository::discover(scratch.dir).dirty({}));
}
