#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/files.hpp"
#include "util/journal.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const char* name) {
  auto dir = fs::temp_directory_path() / ("abtrack-journal-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  return dir;
}
std::vector<std::pair<std::string, std::string>> pending(const fs::path& dir, bool commit = false) {
  std::vector<std::pair<std::string, std::string>> out;
  util::for_each_journal_entry(dir, [&](const fs::path& where, const std::string& content) {
    out.emplace_back(where.filename().string(), content);
    return commit;
  });
  return out;
}
std::string bytes_of(const fs::path& file) { return util::read_file(file); }
}  // namespace

TEST_CASE("an entry is written into a slot with its size and checksum, and reads back") {
  auto dir = fresh_dir("roundtrip");
  {
    util::JournalSlot slot(dir, "{\"run\": 0}");
    CHECK(slot.wait() == 0);
    CHECK(slot.file() == dir / "slot-0");
    std::string bytes = bytes_of(slot.file());
    CHECK(bytes.rfind("abtrack-journal 1 10 " + util::sha256_hex("{\"run\": 0}") + "\n{\"run\": 0}", 0) == 0);
    CHECK(bytes.size() == 64 * 1024);  // a slot is written in whole 64 KiB, once
    CHECK(util::journal_entry_of(bytes) == std::optional<std::string>("{\"run\": 0}"));
    // Held by this slot (a flock): recovery leaves it alone.
    CHECK(pending(dir).empty());
  }
  // Not cleared and no longer held: an entry a dead process left, passed to recovery.
  auto left = pending(dir);
  REQUIRE(left.size() == 1);
  CHECK(left[0] == std::make_pair(std::string("slot-0"), std::string("{\"run\": 0}")));
  CHECK(pending(dir).size() == 1);        // fn returned false: it stays
  CHECK(pending(dir, true).size() == 1);  // committed: the slot is freed
  CHECK(pending(dir).empty());
  CHECK_FALSE(util::journal_entry_of(bytes_of(dir / "slot-0")));
}

TEST_CASE("a freed slot is reused in place, a held one or one with an entry left in it is not") {
  auto dir = fresh_dir("reuse");
  {
    util::JournalSlot a(dir, "first");
    a.clear();
  }
  {
    util::JournalSlot b(dir, "second");
    CHECK(b.file() == dir / "slot-0");  // the freed slot, not a new file
    util::JournalSlot c(dir, "third");  // slot-0 is held
    CHECK(c.file() == dir / "slot-1");
    c.clear();
  }  // b is not cleared: its entry stays in slot-0
  {
    util::JournalSlot d(dir, "fourth");
    CHECK(d.file() == dir / "slot-1");  // slot-0 keeps the entry left in it
    auto left = pending(dir);
    REQUIRE(left.size() == 1);
    CHECK(left[0].second == "second");
    d.clear();
  }
  CHECK(fs::file_size(dir / "slot-0") == 64 * 1024);
  CHECK(fs::file_size(dir / "slot-1") == 64 * 1024);
}

TEST_CASE("an entry cut short or altered is no entry, and its slot is free") {
  auto dir = fresh_dir("torn");
  std::string big(5000, 'x');
  { util::JournalSlot s(dir, big); }
  std::string bytes = bytes_of(dir / "slot-0");
  REQUIRE(util::journal_entry_of(bytes) == std::optional<std::string>(big));
  auto header = bytes.find('\n') + 1;
  CHECK_FALSE(util::journal_entry_of(bytes.substr(0, header + 4000)));  // cut short
  std::string altered = bytes;
  altered[header + 10] = 'y';
  CHECK_FALSE(util::journal_entry_of(altered));  // checksum
  CHECK_FALSE(util::journal_entry_of(""));
  CHECK_FALSE(util::journal_entry_of("abtrack-journal 1 x y\n"));
  CHECK_FALSE(util::journal_entry_of("abtrack-journal 2 1 00\nx"));
  {
    std::fstream f(dir / "slot-0", std::ios::in | std::ios::out | std::ios::binary);
    f.write(altered.data(), static_cast<std::streamsize>(altered.size()));
  }
  CHECK(pending(dir).empty());
  util::JournalSlot again(dir, "new");
  CHECK(again.file() == dir / "slot-0");
}

TEST_CASE("a slot grows for a large entry and keeps its size for smaller ones") {
  auto dir = fresh_dir("grow");
  std::string large(100 * 1024, 'L');
  {
    util::JournalSlot s(dir, large);
    CHECK(fs::file_size(s.file()) == 128 * 1024);
    s.clear();
  }
  {
    util::JournalSlot s(dir, "small");
    CHECK(s.file() == dir / "slot-0");
    CHECK(fs::file_size(s.file()) == 128 * 1024);
  }
  auto left = pending(dir);
  REQUIRE(left.size() == 1);
  CHECK(left[0].second == "small");  // the large entry's tail is not part of it
}

TEST_CASE("entries of earlier versions (<id>.json) are recovered after the slots and removed once committed") {
  auto dir = fresh_dir("legacy");
  fs::create_directories(dir);
  { std::ofstream(dir / "abc.json") << "{\"legacy\": true}"; }
  { std::ofstream(dir / "abc.json.tmp") << "cut short"; }  // never renamed: not an entry
  { util::JournalSlot s(dir, "slotted"); }
  auto left = pending(dir);
  REQUIRE(left.size() == 2);
  CHECK(left[0].first == "slot-0");
  CHECK(left[1] == std::make_pair(std::string("abc.json"), std::string("{\"legacy\": true}")));
  CHECK(fs::exists(dir / "abc.json"));
  CHECK(pending(dir, true).size() == 2);
  CHECK_FALSE(fs::exists(dir / "abc.json"));
  CHECK(pending(dir).empty());
  CHECK(pending(fresh_dir("missing")).empty());
}
