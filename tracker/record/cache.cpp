#include "record/cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "record/compare.hpp"
#include "util/files.hpp"

namespace abtrack::record {
namespace {

// 3: the machine (host, driver, GPU names) and the artifacts, which the document compares.
// 4: a header (with its own checksum) first, so a step decodes only the records it shows.
// 5: the same frames with a faster checksum; the file is memory-mapped, so no version
//    truncates it in place any more (a process that truncated a file another one maps would
//    crash that one with SIGBUS): versions up to 4 remove a file of another version instead,
//    which a mapping survives.
// 6: the code's content identity (Code::tree) in the header, the schedule in the body.
// 7: the code's recipe and revision in the header.
// 8: whether the schedule's batch ran `rounds: auto`.
// 9: each artifact's compiled-code facts (its record's `cuda` object, as JSON text).
// 10: the throttle reasons the watcher saw (Run::throttled), which the document flags.
// 11: the seconds the run's commands took (Run::command_s, in the header), which the document's
//     summary adds up over every record.
// 12: what the watcher saw of each invocation (Invocation::watch, the rest of the invocation
//     left out), which the document's evidence shows.
// 13: the kernels each ncu profile measured (Profile::kernels, the rest of the profile left out),
//     which the evidence finds in the compiled code; the GPUs' UUIDs, by which a run's watched
//     GPUs are named (record::gpu_kinds); the run's kinds of GPU in the header, which decide
//     which baseline runs a step reads in full.
constexpr std::string_view kMagic = "abtrack-record-cache 13\n";

class Writer {
 public:
  template <class T>
  void pod(T v) {
    m_out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(std::string_view s) {
    pod<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    m_out.append(s);
  }
  std::string take() { return std::move(m_out); }

 private:
  std::string m_out;
};

// Reads a frame's fields. A malformed frame is an expected failure (a cache miss), kept like an
// istream's: the first reason sticks, and every later read yields zeros and empty strings, so
// the decoders check once, at the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : m_in(in) {}
  template <class T>
  T pod() {
    T v{};
    if (!need(sizeof v)) return v;
    std::memcpy(&v, m_in.data(), sizeof v);
    m_in.remove_prefix(sizeof v);
    return v;
  }
  std::string str() { return std::string(view()); }
  std::string_view view() {
    auto n = pod<std::uint32_t>();
    if (!need(n)) return {};
    auto s = m_in.substr(0, n);
    m_in.remove_prefix(n);
    return s;
  }
  // A count read from the frame, or 0 (and the frame malformed) past `limit`.
  std::uint32_t count(std::size_t limit, const char* what) {
    auto n = pod<std::uint32_t>();
    if (n <= limit) return n;
    fail(fmt::format("bad {} count in cache frame", what));
    return 0;
  }
  void fail(std::string why) {
    if (m_error.empty()) m_error = std::move(why);
    m_in = {};
  }
  const std::string& error() const { return m_error; }
  bool done() const { return m_in.empty(); }
  std::string_view rest() const { return m_in; }

 private:
  bool need(std::size_t n) {
    if (m_in.size() >= n) return true;
    fail("truncated cache frame");
    return false;
  }
  std::string_view m_in;
  std::string m_error;
};

// The frames' checksum: FNV-1a's xor-and-multiply over 8 bytes at a time (a byte at a time it
// was ~0.15 ms of a step at 1000 runs, one serial multiply per byte), folded to 32 bits. Each
// step is a bijection of the state, so a changed word always changes the result.
std::uint32_t checksum(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  h = (h ^ s.size()) * 1099511628211ull;
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

// An invocation's watch, every field (the document's evidence reads the busy medians and the
// throttle reasons; the rest keeps the cached watch equal to the record's).
void put_watch(Writer& w, const runner::Watch& watch) {
  w.pod<std::uint8_t>(watch.nvml);
  w.str(watch.reason);
  w.pod<double>(watch.interval_ms);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(watch.gpus.size()));
  for (const auto& g : watch.gpus) {
    w.pod<std::uint32_t>(g.index);
    w.str(g.uuid);
    w.pod<std::int32_t>(g.samples);
    w.pod<std::int32_t>(g.busy);
    for (const auto* r : {&g.sm_clock_mhz, &g.mem_clock_mhz, &g.power_w, &g.power_limit_w, &g.temperature_c,
                          &g.gpu_util_pct, &g.mem_util_pct}) {
      w.pod<std::uint8_t>(r->has_value());
      if (*r) w.pod<double>((*r)->min), w.pod<double>((*r)->median), w.pod<double>((*r)->max);
    }
    for (const auto* v : {&g.busy_sm_clock_mhz, &g.busy_mem_clock_mhz, &g.busy_power_w, &g.busy_gpu_util_pct}) {
      w.pod<std::uint8_t>(v->has_value());
      if (*v) w.pod<double>(**v);
    }
    w.pod<std::uint32_t>(static_cast<std::uint32_t>(g.throttle.size()));
    for (const auto& t : g.throttle) w.str(t);
  }
}

runner::Watch get_watch(Reader& in, std::size_t limit) {
  runner::Watch watch;
  watch.nvml = in.pod<std::uint8_t>() != 0;
  watch.reason = in.str();
  watch.interval_ms = in.pod<double>();
  for (auto n = in.count(limit, "GPU"); n > 0; --n) {
    runner::GpuWatch g;
    g.index = in.pod<std::uint32_t>();
    g.uuid = in.str();
    g.samples = in.pod<std::int32_t>();
    g.busy = in.pod<std::int32_t>();
    for (auto* r : {&g.sm_clock_mhz, &g.mem_clock_mhz, &g.power_w, &g.power_limit_w, &g.temperature_c, &g.gpu_util_pct,
                    &g.mem_util_pct})
      if (in.pod<std::uint8_t>()) {
        runner::Range range;
        range.min = in.pod<double>();
        range.median = in.pod<double>();
        range.max = in.pod<double>();
        *r = range;
      }
    for (auto* v : {&g.busy_sm_clock_mhz, &g.busy_mem_clock_mhz, &g.busy_power_w, &g.busy_gpu_util_pct})
      if (in.pod<std::uint8_t>()) *v = in.pod<double>();
    for (auto t = in.count(limit, "throttle"); t > 0; --t) g.throttle.push_back(in.str());
    watch.gpus.push_back(std::move(g));
  }
  return watch;
}

}  // namespace

std::string encode_frame(std::string_view oid, const Record& r) {
  Writer h;
  h.str(r.experiment);
  h.pod<std::int32_t>(r.run);
  h.str(r.data.id);
  h.pod<std::uint32_t>(static_cast<std::uint32_t>(r.cell.size()));
  for (const auto& [k, v] : r.cell) {
    h.str(k);
    h.str(v);
  }
  h.pod<std::uint8_t>(static_cast<std::uint8_t>(r.data.outcome));
  h.str(r.code.commit);
  h.pod<std::uint8_t>(r.code.dirty);
  h.str(r.code.snapshot);
  h.str(r.code.tree);
  h.str(r.code.recipe);
  h.str(r.code.revision);
  h.pod<double>(r.data.command_s);
  h.str(gpu_kinds_key(r));
  std::string header = h.take();
  Writer w;
  w.str(oid);
  w.pod<std::uint32_t>(checksum(header));
  w.str(header);
  w.str(r.data.reason);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.data.samples.size()));
  for (const auto& [name, s] : r.data.samples) {
    w.str(name);
    w.pod<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    for (double v : s) w.pod<double>(v);
  }
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.data.gates.size()));
  for (const auto& g : r.data.gates) {
    w.str(g.expression);
    w.str(g.metric);
    w.pod<std::uint8_t>(g.evaluated);
    w.pod<std::uint8_t>(g.holds);
    w.pod<std::uint8_t>(g.worst.has_value());
    w.pod<double>(g.worst.value_or(0));
    w.pod<std::uint64_t>(g.violations);
  }
  w.str(r.env.host);
  w.str(r.env.driver);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.env.gpus.size()));
  for (const auto& g : r.env.gpus) {
    w.str(g.name);
    w.str(g.uuid);
  }
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.artifacts.size()));
  for (const auto& a : r.artifacts) {
    w.str(a.path);
    w.str(a.sha256);
    w.pod<std::uint64_t>(a.bytes);
    w.str(a.cuda ? cuda_facts_to_json(*a.cuda) : std::string());
  }
  // The schedule pairs a cell's runs with its baseline's, round by round.
  w.pod<std::uint8_t>(r.data.schedule.has_value());
  if (const auto* s = r.data.schedule ? &*r.data.schedule : nullptr) {
    w.pod<std::int32_t>(s->round);
    w.pod<std::int32_t>(s->rounds);
    w.pod<std::uint64_t>(s->seed);
    w.pod<std::int32_t>(s->position);
    w.str(s->batch);
    w.pod<std::uint8_t>(s->sequential);
  }
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.data.throttled.or_empty().size()));
  for (const auto& t : r.data.throttled.or_empty()) w.str(t);
  // The invocations' watches; none at all when no invocation was watched.
  const bool watched = std::any_of(r.data.invocations.begin(), r.data.invocations.end(),
                                   [](const runner::Invocation& i) { return i.watch.has_value(); });
  w.pod<std::uint32_t>(watched ? static_cast<std::uint32_t>(r.data.invocations.size()) : 0);
  if (watched)
    for (const auto& i : r.data.invocations) {
      w.pod<std::uint8_t>(i.watch.has_value());
      if (i.watch) put_watch(w, *i.watch);
    }
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.data.profiles.or_empty().size()));
  for (const auto& p : r.data.profiles.or_empty()) {
    w.pod<std::uint32_t>(static_cast<std::uint32_t>(p.kernels.size()));
    for (const auto& k : p.kernels) w.str(k);
  }
  std::string payload = w.take();
  Writer frame;
  frame.pod<std::uint32_t>(static_cast<std::uint32_t>(payload.size()));
  frame.pod<std::uint32_t>(checksum(payload));
  return frame.take() + payload;
}

std::pair<std::string, Record> decode_frame(std::string_view payload, Part part) {
  Record r;
  std::string oid(try_decode_frame(payload, r, part).value_or_throw());
  return {std::move(oid), std::move(r)};
}

std::optional<std::string_view> HeaderView::value(std::string_view axis) const {
  Reader in(cell);
  for (auto n = cell_size; n > 0; --n) {
    auto k = in.view();
    auto v = in.view();
    if (k == axis) return v;
  }
  return std::nullopt;
}

Expected<std::string_view> try_decode_header(std::string_view payload, HeaderView& h) {
  Reader in(payload);
  std::string_view oid = in.view();
  auto header_sum = in.pod<std::uint32_t>();
  auto header = in.view();
  if (!in.error().empty()) return Failure(in.error());
  if (checksum(header) != header_sum) return Failure("bad header checksum in cache frame");
  Reader r(header);
  h.experiment = r.view();
  h.run = r.pod<std::int32_t>();
  h.id = r.view();
  h.cell_size = r.count(header.size(), "cell");
  std::string_view rest = r.rest();
  for (auto n = h.cell_size; n > 0; --n) {
    r.view();
    r.view();
  }
  h.cell = rest.substr(0, rest.size() - r.rest().size());
  auto outcome = r.pod<std::uint8_t>();
  if (outcome > 2) r.fail("bad outcome in cache frame");
  h.outcome = static_cast<runner::Outcome>(outcome);
  h.commit = r.view();
  h.dirty = r.pod<std::uint8_t>();
  h.snapshot = r.view();
  h.tree = r.view();
  h.recipe = r.view();
  h.revision = r.view();
  h.command_s = r.pod<double>();
  h.gpus = r.view();
  if (!r.error().empty()) return Failure(r.error());
  if (!r.done()) return Failure("trailing bytes in a cache frame's header");
  return oid;
}

std::string_view decode_header(std::string_view payload, HeaderView& h) {
  return try_decode_header(payload, h).value_or_throw();
}

Expected<std::string_view> try_decode_frame(std::string_view payload, Record& r, Part part) {
  // The whole frame's checksum is checked by RecordCache::get; the header's always, here.
  HeaderView h;
  auto decoded = try_decode_header(payload, h);
  if (!decoded) return decoded;
  std::string_view oid = decoded.value();
  r.experiment = h.experiment;
  r.run = h.run;
  r.data.id = h.id;
  Reader cell(h.cell);
  r.cell.reserve(h.cell_size);
  for (auto n = h.cell_size; n > 0; --n) {
    std::string k = cell.str();
    r.cell.emplace_back(std::move(k), cell.str());
  }
  r.data.outcome = h.outcome;
  r.code.commit = h.commit;
  r.code.dirty = h.dirty;
  r.code.snapshot = h.snapshot;
  r.code.tree = h.tree;
  r.code.recipe = h.recipe;
  r.code.revision = h.revision;
  r.data.command_s = h.command_s;
  if (part == Part::header) return oid;
  Reader in(payload);
  in.view();
  in.pod<std::uint32_t>();
  in.view();
  r.data.reason = in.str();
  for (auto n = in.count(payload.size(), "metric"); n > 0; --n) {
    auto& s = r.data.samples[in.str()];
    auto count = in.count(payload.size(), "sample");
    s.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) s.push_back(in.pod<double>());
  }
  for (auto n = in.count(payload.size(), "gate"); n > 0; --n) {
    gates::GateResult g;
    g.expression = in.str();
    g.metric = in.str();
    g.evaluated = in.pod<std::uint8_t>();
    g.holds = in.pod<std::uint8_t>();
    bool has_worst = in.pod<std::uint8_t>();
    double worst = in.pod<double>();
    if (has_worst) g.worst = worst;
    g.violations = in.pod<std::uint64_t>();
    r.data.gates.push_back(std::move(g));
  }
  r.env.host = in.str();
  r.env.driver = in.str();
  for (auto n = in.count(payload.size(), "GPU"); n > 0; --n) {
    runner::Gpu g;
    g.name = in.str();
    g.uuid = in.str();
    r.env.gpus.push_back(std::move(g));
  }
  for (auto n = in.count(payload.size(), "artifact"); n > 0; --n) {
    Artifact a;
    a.path = in.str();
    a.sha256 = in.str();
    a.bytes = in.pod<std::uint64_t>();
    if (auto cuda = in.view(); !cuda.empty()) {
      auto facts = parse_cuda_facts(cuda);
      if (facts) a.cuda = std::move(facts).value();
      else in.fail("bad cuda facts in cache frame: " + facts.error());
    }
    r.artifacts.push_back(std::move(a));
  }
  if (in.pod<std::uint8_t>()) {
    runner::Schedule s;
    s.round = in.pod<std::int32_t>();
    s.rounds = in.pod<std::int32_t>();
    s.seed = in.pod<std::uint64_t>();
    s.position = in.pod<std::int32_t>();
    s.batch = in.str();
    s.sequential = in.pod<std::uint8_t>() != 0;
    r.data.schedule = std::move(s);
  }
  for (auto n = in.count(payload.size(), "throttle"); n > 0; --n) r.data.throttled.ensure().push_back(in.str());
  for (auto n = in.count(payload.size(), "invocation"); n > 0; --n) {
    auto& inv = r.data.invocations.emplace_back();
    if (in.pod<std::uint8_t>()) inv.watch = get_watch(in, payload.size());
  }
  for (auto n = in.count(payload.size(), "profile"); n > 0; --n) {
    auto& p = r.data.profiles.ensure().emplace_back();
    for (auto k = in.count(payload.size(), "kernel"); k > 0; --k) p.kernels.push_back(in.str());
  }
  if (!in.error().empty()) return Failure(in.error());
  if (!in.done()) return Failure("trailing bytes in cache frame");
  return oid;
}

namespace {

// The blob id a frame's payload starts with (see encode_frame), or nullopt when malformed.
std::optional<std::string_view> frame_oid(std::string_view payload) {
  std::uint32_t n;
  if (payload.size() < sizeof n) return std::nullopt;
  std::memcpy(&n, payload.data(), sizeof n);
  if (payload.size() - sizeof n < n) return std::nullopt;
  return payload.substr(sizeof n, n);
}

}  // namespace

RecordCache::RecordCache(std::filesystem::path file) : m_file(std::move(file)) {
  // Mapped, not read: reading the ~450 KB of a thousand records into fresh memory cost a step
  // ~0.3 ms of page faults and copying; the kernel maps the page cache's pages in batches.
  int fd = ::open(m_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // no cache yet
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      m_map = static_cast<const char*>(p);
      m_map_size = static_cast<std::size_t>(st.st_size);
    }
  }
  ::close(fd);
  std::string_view data(m_map, m_map_size);
  if (!data.starts_with(kMagic)) {
    std::error_code ec;
    if (m_map_size > 0)
      std::filesystem::remove(m_file, ec);  // foreign or another format: start over (a cache, never an error)
    return;
  }
  // Only the frames' lengths and ids are read here: a history of thousands of runs is indexed
  // in microseconds, and each record is decoded once, straight into the caller's vector.
  std::size_t slots = 64;
  while (slots < m_map_size / 128) slots *= 2;  // frames are ~400 bytes: a quarter full
  m_slots.resize(slots);
  std::size_t pos = kMagic.size();
  while (pos + 8 <= data.size()) {
    std::uint32_t len;
    std::memcpy(&len, data.data() + pos, 4);
    if (data.size() - pos - 8 < len) break;
    auto payload = data.substr(pos + 8, len);
    auto oid = frame_oid(payload);
    if (!oid) break;
    put(*oid, Span{payload.data(), payload.size()});
    pos += 8 + len;
  }
  // A torn tail (killed mid-append) would hide every later frame: the good frames are written
  // to a new file that replaces this one (never truncated in place: another process may map it).
  if (pos != data.size()) {
    // The cache is only a copy of the records: if this fails, the torn tail stays, and is skipped
    // again next time.
    (void)util::try_write_file_atomic(m_file, data.substr(0, pos), util::Durability::ordinary);
  }
}

RecordCache::~RecordCache() {
  if (m_map) ::munmap(const_cast<char*>(m_map), m_map_size);
}

std::optional<Record> RecordCache::get(std::string_view oid, Part part) const {
  Record r;
  if (!get(oid, part, r)) return std::nullopt;
  return r;
}

bool RecordCache::get(std::string_view oid, Part part, Record& into) const {
  const Slot* slot = find(oid);
  if (!slot) return false;
  std::string_view payload(slot->frame.data, slot->frame.size);
  std::uint32_t sum;
  std::memcpy(&sum, payload.data() - 4, 4);
  // The header has its own checksum (checked by decode_frame): a header read hashes ~100 bytes,
  // not the whole frame.
  if (part == Part::all && checksum(payload) != sum) return false;
  // A bad frame is a cache miss: the record is read from git instead.
  if (auto decoded = try_decode_frame(payload, into, part); decoded && decoded.value() == oid) return true;
  into = Record{};  // half-decoded: the caller parses the record instead
  return false;
}

std::optional<HeaderView> RecordCache::header(std::string_view oid) const {
  const Slot* slot = find(oid);
  if (!slot) return std::nullopt;
  HeaderView h;
  // A bad frame is a cache miss: the record is read from git instead.
  auto decoded = try_decode_header(std::string_view(slot->frame.data, slot->frame.size), h);
  if (decoded && decoded.value() == oid) return h;
  return std::nullopt;
}

void RecordCache::insert(std::string_view oid, const Record& r) {
  const std::string& frame = m_added.emplace_back(encode_frame(oid, r));
  std::string_view payload = std::string_view(frame).substr(8);
  put(*frame_oid(payload), Span{payload.data(), payload.size()});
}

namespace {

// Where an id's probe starts: up to 16 of its bytes (hex digits, ~64 bits of entropy) mixed.
std::size_t slot_hash(std::string_view oid) {
  std::uint64_t a = 0, b = 0;
  std::memcpy(&a, oid.data(), std::min<std::size_t>(8, oid.size()));
  if (oid.size() > 8) std::memcpy(&b, oid.data() + 8, std::min<std::size_t>(8, oid.size() - 8));
  std::uint64_t h = (a ^ (b * 0xff51afd7ed558ccdull) ^ oid.size()) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

}  // namespace

const RecordCache::Slot* RecordCache::find(std::string_view oid) const {
  if (m_slots.empty() || oid.empty()) return nullptr;
  std::size_t mask = m_slots.size() - 1;
  for (std::size_t i = slot_hash(oid) & mask;; i = (i + 1) & mask) {
    const Slot& s = m_slots[i];
    if (s.oid.empty()) return nullptr;
    if (s.oid == oid) return &s;
  }
}

void RecordCache::put(std::string_view oid, Span frame) {
  if (oid.empty()) return;  // never a blob id; an empty key marks a free slot
  if (m_slots.empty() || 2 * (m_used + 1) > m_slots.size()) {
    std::vector<Slot> old(std::max<std::size_t>(64, 2 * m_slots.size()));
    old.swap(m_slots);
    m_used = 0;
    for (const Slot& s : old)
      if (!s.oid.empty()) put(s.oid, s.frame);
  }
  std::size_t mask = m_slots.size() - 1;
  for (std::size_t i = slot_hash(oid) & mask;; i = (i + 1) & mask) {
    Slot& s = m_slots[i];
    if (s.oid.empty()) {
      s = Slot{oid, frame};
      ++m_used;
      return;
    }
    if (s.oid == oid) {  // a later frame of the same blob replaces the earlier one
      s.frame = frame;
      return;
    }
  }
}

void RecordCache::save() noexcept {
  if (m_saved == m_added.size()) return;
  // Saving the cache is best effort: the records are in git, and a later read adds them again.
  // The system calls fail with return codes; only building the appended bytes can throw.
  try {
    std::error_code ec;
    std::filesystem::create_directories(m_file.parent_path(), ec);
    int fd = ::open(m_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    std::string out;
    // A new (or emptied) file gets the magic line; one another process started meanwhile has it.
    if (::lseek(fd, 0, SEEK_END) == 0) out = kMagic;
    for (std::size_t i = m_saved; i < m_added.size(); ++i) out += m_added[i];
    // One write with O_APPEND: concurrent writers never interleave inside it.
    [[maybe_unused]] auto n = ::write(fd, out.data(), out.size());
    ::close(fd);
    m_saved = m_added.size();
  } catch (const std::bad_alloc&) {
    // No memory for the append: it is left to a later save (see above), which costs speed only.
  }
}

}  // namespace abtrack::record
