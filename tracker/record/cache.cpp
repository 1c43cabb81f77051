#include "record/cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "util/files.hpp"

namespace abtrack::record {
namespace {

// 3: the machine (host, driver, GPU names) and the artifacts, which the document compares.
// 4: a header (with its own checksum) first, so a step decodes only the records it shows.
constexpr std::string_view kMagic = "abtrack-record-cache 4\n";

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

class Reader {
 public:
  explicit Reader(std::string_view in) : m_in(in) {}
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, m_in.data(), sizeof v);
    m_in.remove_prefix(sizeof v);
    return v;
  }
  std::string str() { return std::string(view()); }
  std::string_view view() {
    auto n = pod<std::uint32_t>();
    need(n);
    auto s = m_in.substr(0, n);
    m_in.remove_prefix(n);
    return s;
  }
  bool done() const { return m_in.empty(); }

 private:
  void need(std::size_t n) const {
    if (m_in.size() < n) throw std::runtime_error("truncated cache frame");
  }
  std::string_view m_in;
};

std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

std::string encode_frame(const std::string& oid, const Record& r) {
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
  std::string header = h.take();
  Writer w;
  w.str(oid);
  w.pod<std::uint32_t>(fnv1a(header));
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
  for (const auto& g : r.env.gpus) w.str(g.name);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(r.artifacts.size()));
  for (const auto& a : r.artifacts) {
    w.str(a.path);
    w.str(a.sha256);
    w.pod<std::uint64_t>(a.bytes);
  }
  std::string payload = w.take();
  Writer frame;
  frame.pod<std::uint32_t>(static_cast<std::uint32_t>(payload.size()));
  frame.pod<std::uint32_t>(fnv1a(payload));
  return frame.take() + payload;
}

std::pair<std::string, Record> decode_frame(std::string_view payload, Part part) {
  Reader in(payload);
  std::string oid = in.str();
  auto header_sum = in.pod<std::uint32_t>();
  auto header = in.view();
  if (part == Part::header && fnv1a(header) != header_sum) throw std::runtime_error("bad header checksum in cache frame");
  Record r;
  Reader h(header);
  r.experiment = h.str();
  r.run = h.pod<std::int32_t>();
  r.data.id = h.str();
  for (auto n = h.pod<std::uint32_t>(); n > 0; --n) {
    std::string k = h.str();
    r.cell.emplace_back(std::move(k), h.str());
  }
  auto outcome = h.pod<std::uint8_t>();
  if (outcome > 2) throw std::runtime_error("bad outcome in cache frame");
  r.data.outcome = static_cast<runner::Outcome>(outcome);
  r.code.commit = h.str();
  r.code.dirty = h.pod<std::uint8_t>();
  r.code.snapshot = h.str();
  if (!h.done()) throw std::runtime_error("trailing bytes in a cache frame's header");
  if (part == Part::header) return {std::move(oid), std::move(r)};
  r.data.reason = in.str();
  for (auto n = in.pod<std::uint32_t>(); n > 0; --n) {
    auto& s = r.data.samples[in.str()];
    auto count = in.pod<std::uint32_t>();
    if (count > payload.size()) throw std::runtime_error("bad sample count in cache frame");
    s.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) s.push_back(in.pod<double>());
  }
  for (auto n = in.pod<std::uint32_t>(); n > 0; --n) {
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
  for (auto n = in.pod<std::uint32_t>(); n > 0; --n) {
    runner::Gpu g;
    g.name = in.str();
    r.env.gpus.push_back(std::move(g));
  }
  for (auto n = in.pod<std::uint32_t>(); n > 0; --n) {
    Artifact a;
    a.path = in.str();
    a.sha256 = in.str();
    a.bytes = in.pod<std::uint64_t>();
    r.artifacts.push_back(std::move(a));
  }
  if (!in.done()) throw std::runtime_error("trailing bytes in cache frame");
  return {std::move(oid), std::move(r)};
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
  try {
    m_data = util::read_file(m_file);
  } catch (const std::exception&) {
    return;  // no cache yet
  }
  if (!std::string_view(m_data).starts_with(kMagic)) {
    std::error_code ec;
    std::filesystem::remove(m_file, ec);  // foreign or older format: start over (a cache, never an error)
    m_data.clear();
    return;
  }
  // Only the frames' lengths and ids are read here: a history of thousands of runs is indexed
  // in microseconds, and each record is decoded once, straight into the caller's vector.
  std::size_t pos = kMagic.size();
  while (pos + 8 <= m_data.size()) {
    std::uint32_t len;
    std::memcpy(&len, m_data.data() + pos, 4);
    if (m_data.size() - pos - 8 < len) break;
    auto oid = frame_oid(std::string_view(m_data).substr(pos + 8, len));
    if (!oid) break;
    m_frames.insert_or_assign(std::string(*oid), Span{pos + 8, len});
    pos += 8 + len;
  }
  // A torn tail (killed mid-append) would hide every later frame: cut it off.
  if (pos != m_data.size()) {
    [[maybe_unused]] int rc = ::truncate(m_file.c_str(), static_cast<off_t>(pos));
    m_data.resize(pos);
  }
  m_saved = m_data.size();
}

std::optional<Record> RecordCache::get(const std::string& oid, Part part) const {
  auto it = m_frames.find(oid);
  if (it == m_frames.end()) return std::nullopt;
  std::string_view payload(m_data.data() + it->second.offset, it->second.size);
  std::uint32_t sum;
  std::memcpy(&sum, m_data.data() + it->second.offset - 4, 4);
  // The header has its own checksum (checked by decode_frame): a header read hashes ~100 bytes,
  // not the whole frame.
  if (part == Part::all && fnv1a(payload) != sum) return std::nullopt;
  try {
    auto [frame_id, rec] = decode_frame(payload, part);
    if (frame_id != oid) return std::nullopt;
    return std::move(rec);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void RecordCache::insert(const std::string& oid, const Record& r) {
  if (m_data.empty()) m_data = kMagic;
  std::string frame = encode_frame(oid, r);
  m_frames.insert_or_assign(oid, Span{m_data.size() + 8, frame.size() - 8});
  m_data += frame;
}

void RecordCache::save() noexcept {
  if (m_data.size() <= m_saved) return;
  try {
    std::error_code ec;
    std::filesystem::create_directories(m_file.parent_path(), ec);
    int fd = ::open(m_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    // A file another process started meanwhile already has the magic line.
    std::string_view out(m_data);
    out.remove_prefix(m_saved == 0 && ::lseek(fd, 0, SEEK_END) != 0 ? kMagic.size() : m_saved);
    // One write with O_APPEND: concurrent writers never interleave inside it.
    [[maybe_unused]] auto n = ::write(fd, out.data(), out.size());
    ::close(fd);
    m_saved = m_data.size();
  } catch (const std::exception&) {
  }
}

}  // namespace abtrack::record
