#include "util/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/files.hpp"

namespace abtrack::util {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMagic = "abtrack-journal 1 ";
constexpr std::size_t kGrain = 64 * 1024;  // a slot's size grows by whole 64 KiB, written once
constexpr int kMaxSlots = 4096;

// The bytes of an open file, from its start.
std::string read_fd(int fd) {
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) return out;
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

// The entry of an open slot, nullopt when none. A free slot (the common case) costs one small
// read: the whole slot is read only when its header starts like an entry's.
std::optional<std::string> entry_in(int fd) {
  char head[kMagic.size()];
  if (::pread(fd, head, sizeof head, 0) != static_cast<ssize_t>(sizeof head) ||
      std::string_view(head, sizeof head) != kMagic)
    return std::nullopt;
  return journal_entry_of(read_fd(fd));
}

// Frees a slot: its header no longer starts like an entry's.
void free_slot(int fd) { (void)write_all_at(fd, std::string_view("\0", 1), 0); }

// The slot number of "slot-N", nullopt for other names.
std::optional<int> slot_number(const std::string& name) {
  if (name.rfind("slot-", 0) != 0 || name.size() == 5) return std::nullopt;
  int n = 0;
  auto [end, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), n);
  if (ec != std::errc() || end != name.data() + name.size() || n < 0) return std::nullopt;
  return n;
}

}  // namespace

std::optional<std::string> journal_entry_of(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  std::string_view rest = bytes.substr(kMagic.size());
  auto eol = rest.find('\n');
  if (eol == std::string_view::npos) return std::nullopt;
  std::string_view line = rest.substr(0, eol);
  auto space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::size_t size = 0;
  auto [end, ec] = std::from_chars(line.data(), line.data() + space, size);
  if (ec != std::errc() || end != line.data() + space) return std::nullopt;
  std::string_view sum = line.substr(space + 1);
  std::string_view body = rest.substr(eol + 1);
  if (body.size() < size) return std::nullopt;  // cut short
  body = body.substr(0, size);
  if (sha256_hex(body) != sum) return std::nullopt;
  return std::string(body);
}

JournalSlot::JournalSlot(const fs::path& dir, std::string_view content) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (int n = 0;; ++n) {
    if (n >= kMaxSlots)
      throw Error(Exit::environment, fmt::format("the journal {} has {} slots in use", dir.string(), kMaxSlots),
                  "entries left there are committed by the next step or run; remove the folder if none is wanted");
    fs::path file = dir / fmt::format("slot-{}", n);
    m_fd.reset(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (m_fd.get() < 0)
      throw Error(Exit::environment,
                  fmt::format("cannot write the journal {}: {}", file.string(), std::strerror(errno)));
    // Held by a live process, or holding an entry that a process which died left (the next
    // for_each_journal_entry commits it): not free.
    if (::flock(m_fd.get(), LOCK_EX | LOCK_NB) == 0 && !entry_in(m_fd.get())) {
      m_file = std::move(file);
      break;
    }
  }
  std::string bytes = fmt::format("{}{} {}\n", kMagic, content.size(), sha256_hex(content));
  bytes += content;
  // A slot too small for the entry grows by whole grains of zeros, written now, so that later
  // entries overwrite blocks the file already has.
  struct stat st {};
  if (::fstat(m_fd.get(), &st) != 0 || static_cast<std::size_t>(st.st_size) < bytes.size())
    bytes.resize((bytes.size() + kGrain - 1) / kGrain * kGrain, '\0');
  if (int err = write_all_at(m_fd.get(), bytes, 0); err != 0)
    throw Error(Exit::environment, fmt::format("cannot write the journal {}: {}", m_file.string(), std::strerror(err)));
  auto sync = [this] { m_sync_errno = ::fdatasync(m_fd.get()) != 0 ? errno : 0; };
  try {
    m_sync = std::thread(sync);
  } catch (const std::system_error&) {
    sync();  // no thread to be had: wait for the disk here
  }
}

int JournalSlot::wait() {
  if (m_sync.joinable()) m_sync.join();
  return m_sync_errno;
}

void JournalSlot::clear() {
  wait();
  free_slot(m_fd.get());
}

JournalSlot::~JournalSlot() { wait(); }  // then m_fd closes, and with it the lock

void for_each_journal_entry(const fs::path& dir, const std::function<bool(const fs::path&, const std::string&)>& fn) {
  std::error_code ec;
  std::vector<std::pair<int, fs::path>> slots;
  std::vector<fs::path> legacy;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (auto n = slot_number(name)) slots.emplace_back(*n, e.path());
    else if (e.path().extension() == ".json") legacy.push_back(e.path());
  }
  std::sort(slots.begin(), slots.end());
  std::sort(legacy.begin(), legacy.end());
  for (const auto& [n, file] : slots) {
    UniqueFd f(::open(file.c_str(), O_RDWR | O_CLOEXEC));
    if (f.get() < 0 || ::flock(f.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its process is alive and committing it
    auto entry = entry_in(f.get());
    if (entry && fn(file, *entry)) free_slot(f.get());
  }
  // Earlier versions wrote "<id>.json.tmp", fsynced it and renamed it to "<id>.json".
  for (const auto& file : legacy) {
    UniqueFd f(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.get() < 0 || ::flock(f.get(), LOCK_EX | LOCK_NB) != 0) continue;
    if (!fs::exists(file, ec)) continue;  // committed and removed meanwhile
    std::string content = read_fd(f.get());
    if (fn(file, content)) fs::remove(file, ec);
  }
}

}  // namespace abtrack::util
