#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "record/cache.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {
record::Record sample_record(int run) {
  record::Record r;
  r.experiment = "occ";
  r.run = run;
  r.cell = {{"warps", "8"}, {"batch", "64"}};
  r.data.id = "0123456789abcdef0123456789abcdef";
  r.data.outcome = runner::Outcome::fail;
  r.data.reason = "gate 'x' does not hold";
  r.data.samples["t"] = {1.5, 2.25, -0.0};
  gates::GateResult g;
  g.expression = "t <= 2";
  g.metric = "t";
  g.evaluated = true;
  g.holds = false;
  g.worst = 2.25;
  g.violations = 1;
  r.data.gates.push_back(g);
  r.code.commit = std::string(40, 'a');
  r.code.dirty = true;
  r.code.snapshot = std::string(40, 'b');
  r.data.throttled = {"sw_power_cap", "hw_slowdown"};
  r.data.command_s = 12.25;
  return r;
}
// A 40-digit blob id: the same 16 leading digits for every i below 2^16 (as ids that collide in
// the cache table's hash would), then i.
std::string fmt_oid(int i) {
  char buf[41];
  std::snprintf(buf, sizeof buf, "%016x%024x", 0xabcdefu, static_cast<unsigned>(i));
  return std::string(buf, 40);
}
}  // namespace

TEST_CASE("a cache frame keeps everything the document and status read") {
  auto frame = record::encode_frame("oid1", sample_record(7));
  auto [oid, back] = record::decode_frame(std::string_view(frame).substr(8));
  CHECK(oid == "oid1");
  CHECK(back.run == 7);
  CHECK(back.cell == sample_record(7).cell);
  CHECK(back.data.id == sample_record(7).data.id);
  CHECK(back.data.outcome == runner::Outcome::fail);
  CHECK(back.data.reason == "gate 'x' does not hold");
  CHECK(back.data.samples["t"] == std::vector<double>{1.5, 2.25, -0.0});
  REQUIRE(back.data.gates.size() == 1);
  CHECK(*back.data.gates[0].worst == 2.25);
  CHECK(back.data.throttled.or_empty() == std::vector<std::string>{"sw_power_cap", "hw_slowdown"});
  CHECK(back.data.command_s == 12.25);
  CHECK(back.code.trailer() == sample_record(7).code.trailer());
  CHECK_THROWS(record::decode_frame(std::string_view(frame).substr(8, 20)));
}

TEST_CASE("a malformed cache frame is a failure with its reason, whatever its counts say") {
  auto frame = record::encode_frame("oid1", sample_record(7));
  std::string_view payload = std::string_view(frame).substr(8);
  record::Record into;
  auto truncated = record::try_decode_frame(payload.substr(0, 20), into);
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error() == "truncated cache frame");
  // The count of metrics follows the oid, the header's checksum, the header and the reason.
  std::uint32_t header_size;
  std::memcpy(&header_size, payload.data() + 12, 4);
  const std::size_t metrics_at = 16 + header_size + 4 + sample_record(7).data.reason.size();
  std::string bad(payload);
  const std::uint32_t huge = 0xfffffff0u;
  std::memcpy(bad.data() + metrics_at, &huge, 4);
  into = record::Record{};
  auto counted = record::try_decode_frame(bad, into);
  REQUIRE_FALSE(counted.ok());
  CHECK(counted.error() == "bad metric count in cache frame");
  CHECK(record::try_decode_frame(payload, into = record::Record{}).value() == "oid1");
}

TEST_CASE("a cache frame keeps the kernels each ncu profile measured, which the evidence reads") {
  auto r = sample_record(7);
  CHECK_FALSE(record::decode_frame(std::string_view(record::encode_frame("oid1", r)).substr(8)).second.data.profiles);
  runner::Profile a, b;
  a.kernels = {"void unnamed>::decode<1, 8>(Params)"};
  a.metrics = {"occ_regs"};
  b.kernels = {"combine<512>", "combine<256>"};
  r.data.profiles = std::vector<runner::Profile>{a, b};
  auto back = record::decode_frame(std::string_view(record::encode_frame("oid1", r)).substr(8)).second;
  REQUIRE(back.data.profiles);
  REQUIRE(back.data.profiles->size() == 2);
  CHECK((*back.data.profiles)[0].kernels == a.kernels);
  CHECK((*back.data.profiles)[1].kernels == b.kernels);
}

TEST_CASE("a cache frame keeps what the watcher saw of each invocation, which the evidence reads") {
  auto r = sample_record(7);
  CHECK(record::decode_frame(std::string_view(record::encode_frame("oid1", r)).substr(8))
            .second.data.invocations.empty());
  runner::Watch w;
  w.nvml = true;
  w.interval_ms = 20;
  runner::GpuWatch g;
  g.index = 1;
  g.uuid = "GPU-fake";
  g.samples = 12;
  g.busy = 9;
  g.sm_clock_mhz = runner::Range{345, 1980, 1980};
  g.power_w = runner::Range{80, 400.5, 650};
  g.busy_sm_clock_mhz = 1980;
  g.busy_power_w = 455.25;
  g.busy_gpu_util_pct = 98;
  g.throttle = {"sw_power_cap"};
  w.gpus = {g, g};
  r.data.invocations.resize(3);
  r.data.invocations[0].watch = w;
  r.data.invocations[2].watch = runner::Watch{false, "no NVIDIA driver", 0, {}};
  auto back = record::decode_frame(std::string_view(record::encode_frame("oid1", r)).substr(8)).second;
  REQUIRE(back.data.invocations.size() == 3);
  REQUIRE(back.data.invocations[0].watch);
  CHECK_FALSE(back.data.invocations[1].watch);
  CHECK(back.data.invocations[2].watch->reason == "no NVIDIA driver");
  const auto& bw = *back.data.invocations[0].watch;
  CHECK(bw.interval_ms == 20);
  REQUIRE(bw.gpus.size() == 2);
  const auto& bg = bw.gpus[1];
  CHECK(bg.uuid == "GPU-fake");
  CHECK(bg.busy == 9);
  CHECK(*bg.sm_clock_mhz == runner::Range{345, 1980, 1980});
  CHECK(*bg.power_w == runner::Range{80, 400.5, 650});
  CHECK_FALSE(bg.mem_clock_mhz);
  CHECK(*bg.busy_power_w == 455.25);
  CHECK(*bg.busy_gpu_util_pct == 98);
  CHECK_FALSE(bg.busy_mem_clock_mhz);
  CHECK(bg.throttle == std::vector<std::string>{"sw_power_cap"});
}

TEST_CASE("a header read decodes the header alone and checks it") {
  auto frame = record::encode_frame("oid1", sample_record(7));
  auto [oid, head] = record::decode_frame(std::string_view(frame).substr(8), record::Part::header);
  CHECK(oid == "oid1");
  CHECK(head.run == 7);
  CHECK(head.experiment == "occ");
  CHECK(head.cell == sample_record(7).cell);
  CHECK(head.data.id == sample_record(7).data.id);
  CHECK(head.data.outcome == runner::Outcome::fail);
  CHECK(head.code.trailer() == sample_record(7).code.trailer());
  CHECK(head.data.samples.empty());
  CHECK(head.data.reason.empty());
  std::string bad = frame;
  bad[8 + 4 + 4 + 4 + 4 + 2] ^= 1;  // inside the header (after the oid, its checksum and length)
  CHECK_THROWS(record::decode_frame(std::string_view(bad).substr(8), record::Part::header));
}

TEST_CASE("a header view reads a cached header without building a record, a corrupt one is a miss") {
  fs::path dir = fs::temp_directory_path() / "abtrack-unit-cache-view";
  fs::remove_all(dir);
  record::RecordCache c(dir / "occ.records");
  CHECK_FALSE(c.header("oid1"));
  auto r = sample_record(7);
  c.insert("oid1", r);
  auto h = c.header("oid1");  // found before it is saved: a view into the frame just added
  REQUIRE(h);
  CHECK(h->experiment == "occ");
  CHECK(h->run == 7);
  CHECK(h->id == r.data.id);
  CHECK(h->outcome == runner::Outcome::fail);
  CHECK(h->commit == r.code.commit);
  CHECK(h->dirty);
  CHECK(h->snapshot == r.code.snapshot);
  CHECK(h->cell_size == 2);
  CHECK(h->value("batch") == "64");
  CHECK(h->value("warps") == "8");
  CHECK_FALSE(h->value("stages"));
  auto other = sample_record(8);
  other.code.snapshot.clear();
  c.insert("oid2", other);
  CHECK_FALSE(h->same_identity(*c.header("oid2")));
  CHECK(h->same_identity(*c.header("oid1")));
  c.save();
  // A flipped byte inside a header (after the magic line, the frame's length and checksum, the
  // oid with its length, the header's checksum and length) fails the header's checksum.
  std::string bytes;
  {
    std::ifstream in(dir / "occ.records", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[std::string_view("abtrack-record-cache 6\n").size() + 8 + 4 + 4 + 4 + 4 + 2] ^= 1;
  {
    std::ofstream out(dir / "occ.records", std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  record::RecordCache reopened(dir / "occ.records");
  CHECK_FALSE(reopened.header("oid1"));
  CHECK(reopened.header("oid2"));
  fs::remove_all(dir);
}

namespace {
// A fresh cache file in its own folder under the temp folder, holding records 1 and 2 as
// blobs oid1 and oid2.
fs::path cache_with_two_records(const std::string& folder) {
  fs::path dir = fs::temp_directory_path() / folder;
  fs::remove_all(dir);
  fs::path file = dir / "occ.records";
  record::RecordCache c(file);
  c.insert("oid1", sample_record(1));
  c.insert("oid2", sample_record(2));
  CHECK(c.get("oid2")->run == 2);  // found before it is saved
  c.save();
  c.save();  // nothing new: nothing appended
  return file;
}
}  // namespace

TEST_CASE("the cache file survives a torn tail and a foreign file") {
  fs::path file = cache_with_two_records("abtrack-unit-cache");
  fs::path dir = file.parent_path();
  auto size = fs::file_size(file);
  {
    std::ofstream out(file, std::ios::app | std::ios::binary);
    out << "\x20\x00\x00\x00garbage";  // a frame cut short by a kill
  }
  {
    record::RecordCache c(file);
    REQUIRE(c.get("oid1"));
    CHECK(c.get("oid2")->run == 2);
    CHECK_FALSE(c.get("oid3"));
  }
  CHECK(fs::file_size(file) == size);  // the torn tail was cut off
  {
    std::ofstream out(file, std::ios::trunc);
    out << "not a cache";
  }
  record::RecordCache foreign(file);
  CHECK_FALSE(foreign.get("oid1"));
  fs::remove_all(dir);
}

TEST_CASE("a corrupt frame is a miss, re-inserted and found again after a reopen") {
  fs::path file = cache_with_two_records("abtrack-unit-cache-corrupt");
  fs::path dir = file.parent_path();
  auto size = fs::file_size(file);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size) - 3);  // inside oid2's frame
    f.put('\x7f');
  }
  {
    record::RecordCache c(file);
    CHECK(c.get("oid1")->run == 1);
    CHECK_FALSE(c.get("oid2"));  // its checksum no longer matches
    c.insert("oid2", sample_record(2));
    c.save();
  }
  CHECK(fs::file_size(file) > size);
  record::RecordCache again(file);
  CHECK(again.get("oid2")->run == 2);  // the appended frame wins
  CHECK(again.get("oid1")->run == 1);
  fs::remove_all(dir);
}

TEST_CASE("a header read into the caller's record, and a corrupt frame leaves it empty") {
  fs::path file = cache_with_two_records("abtrack-unit-cache-into");
  fs::path dir = file.parent_path();
  {
    record::RecordCache c(file);
    record::Record r;
    REQUIRE(c.get("oid2", record::Part::header, r));
    CHECK(r.run == 2);
    CHECK(r.cell == sample_record(2).cell);
    CHECK(r.data.samples.empty());  // a header only
    record::Record missing;
    missing.run = 9;
    CHECK_FALSE(c.get("oid3", record::Part::header, missing));
  }
  {
    // Corrupt oid1's header (its frame starts right after the magic line).
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::string_view("abtrack-record-cache 6\n").size()) + 8 + 4 + 4 + 4 + 4 + 2);
    f.put('\x7f');
  }
  record::RecordCache c(file);
  record::Record r;
  r.run = 5;
  CHECK_FALSE(c.get("oid1", record::Part::header, r));
  CHECK(r.run == 0);  // reset, not half-decoded
  CHECK(r.experiment.empty());
  CHECK(c.get("oid2", record::Part::header, r));
  fs::remove_all(dir);
}

TEST_CASE("a torn tail is cut by replacing the file, so a process that maps it keeps reading it") {
  fs::path file = cache_with_two_records("abtrack-unit-cache-replace");
  fs::path dir = file.parent_path();
  auto size = fs::file_size(file);
  record::RecordCache reader(file);  // maps the file as it is
  {
    std::ofstream out(file, std::ios::app | std::ios::binary);
    out << std::string("\x20\x00\x00\x00garbage", 11);  // a frame cut short by a kill
  }
  struct stat before {};
  REQUIRE(::stat(file.c_str(), &before) == 0);
  {
    record::RecordCache c(file);  // finds the torn tail
    CHECK(c.get("oid2")->run == 2);
  }
  struct stat after {};
  REQUIRE(::stat(file.c_str(), &after) == 0);
  CHECK(after.st_ino != before.st_ino);  // a new file, not the old one truncated in place
  CHECK(fs::file_size(file) == size);
  CHECK(reader.get("oid1")->run == 1);  // the first mapping still reads its frames
  CHECK(reader.get("oid2")->run == 2);
  fs::remove_all(dir);
}

TEST_CASE("a cache file of format 4 is another format: removed, and the records are parsed again") {
  fs::path dir = fs::temp_directory_path() / "abtrack-unit-cache-v4";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path file = dir / "occ.records";
  auto frame = record::encode_frame("oid1", sample_record(1));
  {
    std::ofstream out(file, std::ios::binary);
    out << "abtrack-record-cache 4\n" << frame;  // the frames were the same; the file was read, not mapped
  }
  {
    record::RecordCache c(file);
    CHECK_FALSE(c.get("oid1"));
    CHECK_FALSE(fs::exists(file));
    c.insert("oid1", sample_record(1));
    c.save();
  }
  record::RecordCache again(file);
  CHECK(again.get("oid1")->run == 1);
  fs::remove_all(dir);
}

TEST_CASE("thousands of records: every one found after the table grows, a later frame of a blob wins, others miss") {
  fs::path dir = fs::temp_directory_path() / "abtrack-unit-cache-many";
  fs::remove_all(dir);
  fs::path file = dir / "occ.records";
  // Ids that share their first 16 hex digits (the table's hash) probe past each other.
  auto oid = [](int i) { return fmt_oid(i); };
  {
    record::RecordCache c(file);
    for (int i = 1; i <= 5000; ++i) c.insert(oid(i), sample_record(i));
    c.insert(oid(7), sample_record(70000));  // the same blob again: the later frame wins
    for (int i = 1; i <= 5000; ++i) REQUIRE(c.header(oid(i)));
    CHECK(c.get(oid(7))->run == 70000);
    CHECK_FALSE(c.get(oid(5001)));
    CHECK_FALSE(c.get(""));
    c.save();
  }
  record::RecordCache reopened(file);
  int found = 0;
  for (int i = 1; i <= 5000; ++i)
    found += reopened.header(oid(i)) && reopened.header(oid(i))->run == (i == 7 ? 70000 : i);
  CHECK(found == 5000);
  CHECK_FALSE(reopened.header(oid(0)));
  CHECK_FALSE(reopened.header(oid(5001)));
  fs::remove_all(dir);
}
