#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "git_scratch.hpp"
#include "gitstore/raw_index.hpp"
#include "util/files.hpp"

using namespace abtrack;
using namespace abtrack::gitstore;
namespace fs = std::filesystem;

namespace {

// A scratch repository with committed files (so its index has a cache tree), read and written
// as raw_index_with_entries sees it.
struct IndexRepo : GitScratch {
  IndexRepo() : GitScratch("rawindex") {
    fs::create_directories(dir / "runs/exp");
    fs::create_directories(dir / "src/deep");
    for (const char* f : {"A.md", "runs/exp/0001.json", "runs/exp/0002.json", "runs/exp-b.txt", "runs/exp.txt", "src/deep/k.cu",
                          "src/main.cpp", "z.txt"})
      util::write_file_atomic(dir / f, fmt::format("content of {}\n", f), util::Durability::ordinary);
    REQUIRE(git("add -A"));
    REQUIRE(git("commit -qm base"));
  }
  fs::path index() const { return dir / ".git/index"; }
  std::string bytes() const { return util::read_file(index()); }
  IndexTime mtime() const {
    struct stat st {};
    REQUIRE(::stat(index().c_str(), &st) == 0);
    return {static_cast<std::uint32_t>(st.st_mtim.tv_sec), static_cast<std::uint32_t>(st.st_mtim.tv_nsec)};
  }
  // The blob id git gives `content`, as raw bytes.
  std::array<std::uint8_t, 20> blob(const std::string& content) const {
    const std::string file = dir.string() + ".blob";
    util::write_file_atomic(file, content, util::Durability::ordinary);
    std::string hex = capture("hash-object -w '" + file + "'");
    fs::remove(file);
    std::array<std::uint8_t, 20> id{};
    for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    return id;
  }
  // A merge that leaves `path` conflicted (its three stages in the index).
  void conflict_at(const std::string& path) const {
    REQUIRE(git("checkout -qb other"));
    util::write_file_atomic(dir / path, "other\n", util::Durability::ordinary);
    REQUIRE(git("commit -qam other"));
    REQUIRE(git("checkout -q -"));
    util::write_file_atomic(dir / path, "mine\n", util::Durability::ordinary);
    REQUIRE(git("commit -qam mine"));
    CHECK_FALSE(git("merge -q other >/dev/null 2>&1"));
  }
  std::string capture(const std::string& args) const {
    fs::path out = dir.string() + ".out";  // outside the work tree
    REQUIRE(git(args + " >'" + out.string() + "'"));
    std::string s = util::read_file(out);
    fs::remove(out);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
};

std::string hex(const std::array<std::uint8_t, 20>& id) {
  std::string s;
  for (auto b : id) s += fmt::format("{:02x}", b);
  return s;
}

// Every entry racily clean or not, the files are unchanged: nothing to smudge.
const StillClean kClean = [](std::string_view, std::uint32_t, const std::uint8_t*) { return true; };

}  // namespace

TEST_CASE("raw index: the same bytes as git update-index --cacheinfo, cache tree included") {
  IndexRepo r;
  REQUIRE(r.bytes().find("TREE") != std::string::npos);  // git commit left a cache tree
  // Entries without stat data, as --cacheinfo makes them: a replacement, insertions at the start,
  // in a folder, between names that share a prefix ("exp" / "exp-b.txt" / "exp.txt"), at the end.
  std::vector<RawIndexEntry> entries;
  for (const char* path : {"A.md", "0.md", "runs/exp/0003.json", "runs/exp.a", "src/deep/a.cu", "zz/new.txt"}) {
    RawIndexEntry e;
    e.path = path;
    e.id = r.blob(fmt::format("new content of {}\n", path));
    entries.push_back(e);
  }
  auto ours = raw_index_with_entries(r.bytes(), r.mtime(), entries, kClean);
  REQUIRE(ours);
  std::string args = "update-index --add";
  for (const auto& e : entries) args += fmt::format(" --cacheinfo 100644,{},{}", hex(e.id), e.path);
  REQUIRE(r.git(args));
  std::string git = r.bytes();
  CHECK(ours->size() == git.size());
  CHECK(*ours == git);
  // And git reads ours back as its own.
  util::write_file_atomic(r.index(), *ours, util::Durability::ordinary);
  CHECK(r.capture("ls-files -s runs/exp/0003.json") == fmt::format("100644 {} 0\truns/exp/0003.json", hex(entries[2].id)));
  CHECK(r.git("fsck --no-dangling"));
}

TEST_CASE("raw index: stat data and sizes are written as given, other entries kept byte for byte") {
  IndexRepo r;
  const std::string before = r.bytes();
  util::write_file_atomic(r.dir / "runs/exp/0003.json", "{\"run\": 3}\n", util::Durability::ordinary);
  struct stat st {};
  REQUIRE(::stat((r.dir / "runs/exp/0003.json").c_str(), &st) == 0);
  RawIndexEntry e;
  e.path = "runs/exp/0003.json";
  e.id = r.blob("{\"run\": 3}\n");
  e.stat.mtime_s = static_cast<std::uint32_t>(st.st_mtim.tv_sec);
  e.stat.mtime_ns = static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
  e.stat.ctime_s = static_cast<std::uint32_t>(st.st_ctim.tv_sec);
  e.stat.ctime_ns = static_cast<std::uint32_t>(st.st_ctim.tv_nsec);
  e.stat.dev = static_cast<std::uint32_t>(st.st_dev);
  e.stat.ino = static_cast<std::uint32_t>(st.st_ino);
  e.stat.uid = st.st_uid;
  e.stat.gid = st.st_gid;
  e.stat.size = static_cast<std::uint32_t>(st.st_size);
  auto ours = raw_index_with_entries(before, r.mtime(), {e}, kClean);
  REQUIRE(ours);
  util::write_file_atomic(r.index(), *ours, util::Durability::ordinary);
  // Stat data that matches the file: git sees it clean without hashing (diff-files does not refresh).
  CHECK(r.capture("diff-files --name-only") == "");
  CHECK(r.capture("status --porcelain") == "A  runs/exp/0003.json");
  CHECK(r.capture("ls-files | wc -l") == "9");
}

TEST_CASE("raw index: a racily clean entry is checked and smudged only when its file changed") {
  IndexRepo r;
  const std::string before = r.bytes();
  std::vector<std::string> asked;
  // The old index's time in the past: every entry counts as racily clean.
  StillClean changed_main = [&](std::string_view path, std::uint32_t mode, const std::uint8_t*) {
    asked.emplace_back(path);
    CHECK(mode == 0100644);
    return path != "src/main.cpp";
  };
  RawIndexEntry e;
  e.path = "z.txt";
  e.id = r.blob("z\n");
  auto ours = raw_index_with_entries(before, IndexTime{1, 0}, {e}, changed_main);
  REQUIRE(ours);
  // Asked for every kept entry, never for the one replaced.
  CHECK(asked.size() == 7);
  CHECK(std::find(asked.begin(), asked.end(), "z.txt") == asked.end());
  util::write_file_atomic(r.index(), *ours, util::Durability::ordinary);
  // The smudged entry has size 0: git diff-files, which trusts stat data, now lists it.
  CHECK(r.capture("diff-files --name-only") == "src/main.cpp\nz.txt");
  // An index written later in the same second as an entry: still racy (git compares seconds),
  // so that entry is asked about.
  struct stat st {};
  REQUIRE(::stat((r.dir / "src/main.cpp").c_str(), &st) == 0);
  asked.clear();
  REQUIRE(raw_index_with_entries(before, IndexTime{static_cast<std::uint32_t>(st.st_mtim.tv_sec), 999999999u}, {e}, changed_main));
  CHECK(std::find(asked.begin(), asked.end(), "src/main.cpp") != asked.end());
  // An index written long after its entries: none is racy, nothing is asked.
  asked.clear();
  REQUIRE(raw_index_with_entries(before, IndexTime{0xffffffffu, 0}, {e}, changed_main));
  CHECK(asked.empty());
}

TEST_CASE("raw index: what it leaves to libgit2") {
  IndexRepo r;
  RawIndexEntry e;
  e.path = "runs/exp/0003.json";
  e.id = r.blob("x\n");
  const std::string good = r.bytes();
  REQUIRE(raw_index_with_entries(good, r.mtime(), {e}, kClean));

  SUBCASE("a torn or corrupt index") {
    std::string bad = good;
    bad[20] ^= 1;
    CHECK_FALSE(raw_index_with_entries(bad, r.mtime(), {e}, kClean));
    CHECK_FALSE(raw_index_with_entries(good.substr(0, good.size() - 1), r.mtime(), {e}, kClean));
    CHECK_FALSE(raw_index_with_entries("", r.mtime(), {e}, kClean));
  }
  SUBCASE("index version 4 (compressed paths)") {
    REQUIRE(r.git("update-index --index-version 4"));
    CHECK_FALSE(raw_index_with_entries(r.bytes(), r.mtime(), {e}, kClean));
  }
  SUBCASE("a split index (the mandatory 'link' extension)") {
    REQUIRE(r.git("update-index --split-index"));
    CHECK_FALSE(raw_index_with_entries(r.bytes(), r.mtime(), {e}, kClean));
  }
  SUBCASE("paths that are not plain, or given twice") {
    for (const char* p : {"", "/abs", "runs//x", "runs/", "./x", "runs/../x", ".git/config", "a/.git/b"}) {
      RawIndexEntry bad = e;
      bad.path = p;
      CHECK_FALSE(raw_index_with_entries(good, r.mtime(), {bad}, kClean));
    }
    CHECK_FALSE(raw_index_with_entries(good, r.mtime(), {e, e}, kClean));
  }
  SUBCASE("a file where a folder is, or a folder where a file is") {
    RawIndexEntry over_folder = e;
    over_folder.path = "runs/exp";  // a folder of two entries
    CHECK_FALSE(raw_index_with_entries(good, r.mtime(), {over_folder}, kClean));
    RawIndexEntry under_file = e;
    under_file.path = "z.txt/inside";
    CHECK_FALSE(raw_index_with_entries(good, r.mtime(), {under_file}, kClean));
  }
  SUBCASE("a path with flags git set on purpose (skip-worktree: an extended, version 3 entry)") {
    REQUIRE(r.git("update-index --skip-worktree z.txt"));
    RawIndexEntry flagged = e;
    flagged.path = "z.txt";
    CHECK_FALSE(raw_index_with_entries(r.bytes(), r.mtime(), {flagged}, kClean));
    // Other paths are fine, and the flag stays where it was.
    auto ours = raw_index_with_entries(r.bytes(), r.mtime(), {e}, kClean);
    REQUIRE(ours);
    util::write_file_atomic(r.index(), *ours, util::Durability::ordinary);
    CHECK(r.capture("ls-files -v z.txt") == "S z.txt");
  }
  SUBCASE("a conflict at the path") {
    r.conflict_at("z.txt");
    RawIndexEntry conflicted = e;
    conflicted.path = "z.txt";
    CHECK_FALSE(raw_index_with_entries(r.bytes(), r.mtime(), {conflicted}, kClean));
  }
}

TEST_CASE("raw index: the untracked cache is dropped, as libgit2 drops it, and git still agrees") {
  IndexRepo r;
  REQUIRE(r.git("-c core.untrackedCache=true update-index --untracked-cache"));
  util::write_file_atomic(r.dir / "untracked.txt", "u\n", util::Durability::ordinary);
  REQUIRE(r.git("-c core.untrackedCache=true status --porcelain >/dev/null"));
  REQUIRE(r.bytes().find("UNTR") != std::string::npos);
  util::write_file_atomic(r.dir / "runs/exp/0003.json", "x\n", util::Durability::ordinary);
  RawIndexEntry e;
  e.path = "runs/exp/0003.json";
  e.id = r.blob("x\n");
  auto ours = raw_index_with_entries(r.bytes(), r.mtime(), {e}, kClean);
  REQUIRE(ours);
  CHECK(ours->find("UNTR") == std::string::npos);
  util::write_file_atomic(r.index(), *ours, util::Durability::ordinary);
  CHECK(r.capture("-c core.untrackedCache=true status --porcelain") == "A  runs/exp/0003.json\n?? untracked.txt");
}

TEST_CASE("file checksum: SHA-1") {
  CHECK(hex(file_checksum("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(hex(file_checksum("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST_CASE("raw index without a folder: git reads every other entry exactly as in the index, and nothing under it") {
  IndexRepo r;
  // A staged change, an entry with a flag (skip-worktree: version 3) and a racily clean entry
  // smudged by git (size 0), all outside runs/, and a conflict: each must survive byte for byte.
  util::write_file_atomic(r.dir / "src/main.cpp", "staged\n", util::Durability::ordinary);
  REQUIRE(r.git("add src/main.cpp"));
  REQUIRE(r.git("update-index --skip-worktree z.txt"));
  const std::string before = r.bytes();
  CHECK(raw_index_counts(before, {"runs"}).under == 4);
  CHECK(raw_index_counts(before, {"runs", "src"}).under == 6);
  CHECK(raw_index_counts(before, {"run"}).under == 0);
  CHECK(raw_index_counts(before, {"run"}).entries == 8);
  // A folder whose name other entries start with: runs/exp/ only, not runs/exp.txt or runs/exp-b.txt.
  REQUIRE(raw_index_counts(before, {"runs/exp"}).under == 2);

  auto copy = raw_index_without(before, {"runs/exp"});
  REQUIRE(copy);
  CHECK(copy->find("TREE") == std::string::npos);  // extensions dropped
  const fs::path file = r.dir.string() + ".copy-index";
  util::write_file_atomic(file, *copy, util::Durability::ordinary);
  // git checks the trailer and the entries; --debug prints every entry's stat data and flags.
  setenv("GIT_INDEX_FILE", file.c_str(), 1);
  std::string ours = r.capture("ls-files --stage --debug");
  std::string ours_flags = r.capture("ls-files -v");
  unsetenv("GIT_INDEX_FILE");
  std::string all = r.capture("ls-files --stage --debug");
  // The real listing without the entries under runs/ (each entry is its line and four or five
  // indented lines of stat data).
  std::string expected;
  bool keep = true;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t nl = all.find('\n', at);
    if (nl == std::string::npos) nl = all.size();
    std::string line = all.substr(at, nl - at);
    if (!line.starts_with("  ")) keep = line.find("\truns/exp/") == std::string::npos;
    if (keep) expected += line + "\n";
    at = nl + 1;
  }
  while (!expected.empty() && expected.back() == '\n') expected.pop_back();
  CHECK(ours == expected);
  CHECK(ours.find("runs/exp.txt") != std::string::npos);
  CHECK(ours.find("runs/exp-b.txt") != std::string::npos);
  CHECK(ours.find("runs/exp/") == std::string::npos);
  CHECK(ours_flags.find("S z.txt") != std::string::npos);
  fs::remove(file);

  SUBCASE("with the checksum trusted, the same bytes") {
    CHECK(raw_index_without(before, {"runs/exp"}, IndexChecksum::trusted) == copy);
  }
  SUBCASE("what it leaves to libgit2") {
    std::string bad = before;
    bad[20] ^= 1;
    CHECK_FALSE(raw_index_without(bad, {"runs"}));
    CHECK_FALSE(raw_index_handled(bad));
    CHECK(raw_index_handled(bad, IndexChecksum::trusted));  // its structure is fine
    CHECK(raw_index_counts(bad, {"runs"}).under == 4);
    CHECK(raw_index_handled(before));
    REQUIRE(r.git("update-index --index-version 4"));
    CHECK_FALSE(raw_index_without(r.bytes(), {"runs"}));
    CHECK_FALSE(raw_index_handled(r.bytes()));
    CHECK(raw_index_counts(r.bytes(), {"runs"}).entries == 0);
    REQUIRE(r.git("update-index --index-version 2"));
    REQUIRE(r.git("update-index --split-index"));
    REQUIRE(r.bytes().find("link") != std::string::npos);
    CHECK_FALSE(raw_index_without(r.bytes(), {"runs"}));
    CHECK_FALSE(raw_index_handled(r.bytes()));
  }
  SUBCASE("resolve-undo data (REUC), which libgit2's status reads") {
    REQUIRE(r.git("commit -qm staged"));
    r.conflict_at("A.md");
    auto conflicted = raw_index_without(r.bytes(), {"runs"});
    REQUIRE(conflicted);  // conflict stages are entries: kept
    util::write_file_atomic(r.dir / "A.md", "resolved\n", util::Durability::ordinary);
    REQUIRE(r.git("add A.md"));
    REQUIRE(r.bytes().find("REUC") != std::string::npos);
    CHECK_FALSE(raw_index_without(r.bytes(), {"runs"}));
  }
}
