#include "util/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <mbedtls/sha256.h>

#include "util/error.hpp"

namespace abtrack::util {
namespace fs = std::filesystem;

Expected<std::string> try_read_file(const fs::path& path) {
  // Whole reads, not an istreambuf_iterator's character at a time: the record cache of a long
  // history is hundreds of KB and is read by every command.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Failure{fmt::format("cannot read {}: {}", path.string(), std::strerror(errno))};
  struct stat st {};
  std::string data;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) data.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Failure{fmt::format("cannot read {}: {}", path.string(), std::strerror(err))};
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return data;
}

std::string read_file(const fs::path& path) { return try_read_file(path).value_or_throw(); }

namespace {
// The write loop of write_all and write_all_at: `put(p, n, done)` writes up to n bytes.
template <class Put>
int put_all(std::string_view data, const Put& put) {
  for (std::size_t done = 0; done < data.size();) {
    ssize_t n = put(data.data() + done, data.size() - done, done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}
}  // namespace

int write_all(int fd, std::string_view data) {
  return put_all(data, [fd](const char* p, std::size_t n, std::size_t) { return ::write(fd, p, n); });
}

int write_all_at(int fd, std::string_view data, std::int64_t offset) {
  return put_all(data, [fd, offset](const char* p, std::size_t n, std::size_t done) {
    return ::pwrite(fd, p, n, static_cast<off_t>(offset + static_cast<std::int64_t>(done)));
  });
}

void UniqueFd::reset(int fd) {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = fd;
}

bool is_atomic_temp(std::string_view path) {
  const std::string_view name = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  const std::size_t tag = name.rfind(".abtrack-");
  if (!name.starts_with('.') || tag == std::string_view::npos || tag < 2 || !name.ends_with(".tmp")) return false;
  const std::string_view digits = name.substr(tag + 9, name.size() - 4 - (tag + 9));
  return !digits.empty() && digits.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

Expected<> try_write_file_atomic(const fs::path& path, std::string_view content, Durability durability) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const fs::path tmp = path.parent_path() / fmt::format(".{}.abtrack-{:x}.tmp", path.filename().string(), rng());
  mode_t mode = 0644;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Failure{fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno))};
  if (int err = write_all(fd, content); err != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Failure{fmt::format("cannot write {}: {}", path.string(), std::strerror(err))};
  }
  // The umask may have narrowed the mode of a new file; an existing file keeps its own.
  ::fchmod(fd, mode);
  if ((durability == Durability::durable && ::fsync(fd) != 0) || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Failure{fmt::format("cannot write {}: {}", path.string(), std::strerror(err))};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Failure{fmt::format("cannot replace {}: {}", path.string(), std::strerror(err))};
  }
  return {};
}

void write_file_atomic(const fs::path& path, std::string_view content, Durability durability) {
  try_write_file_atomic(path, content, durability).value_or_throw();
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[32];
  mbedtls_sha256_ret(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, 0);
  std::string out;
  for (unsigned char c : digest) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace abtrack::util
