#include "gitstore/loose_object.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/files.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

std::string stored_loose_object(std::string_view type, std::string_view data) {
  std::string object = fmt::format("{} {}", type, data.size());
  object.push_back('\0');
  object.append(data);
  // RFC 1950: CMF 0x78 (deflate, 32 KB window), FLG 0x01 (no dictionary, check bits); RFC 1951:
  // stored blocks of at most 65,535 bytes, each "BFINAL/BTYPE=00" (byte-aligned), LEN, ~LEN;
  // then the Adler-32 of the uncompressed bytes, big-endian.
  constexpr std::size_t kBlock = 65535;
  std::string out;
  out.reserve(object.size() + 5 * (object.size() / kBlock + 1) + 6);
  out.push_back(static_cast<char>(0x78));
  out.push_back(static_cast<char>(0x01));
  for (std::size_t at = 0; at < object.size(); at += kBlock) {
    const std::size_t n = std::min(kBlock, object.size() - at);
    const bool last = at + n == object.size();
    const unsigned len = static_cast<unsigned>(n), nlen = ~len & 0xffffu;
    out.push_back(static_cast<char>(last ? 1 : 0));
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(nlen & 0xff));
    out.push_back(static_cast<char>(nlen >> 8));
    out.append(object, at, n);
  }
  const uLong sum = adler32(adler32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(object.data()), static_cast<uInt>(object.size()));
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((sum >> shift) & 0xff));
  return out;
}

void write_stored_loose_object(const fs::path& objects_dir, const std::string& hex, std::string_view type, std::string_view data) {
  const fs::path dir = objects_dir / hex.substr(0, 2);
  const fs::path final_path = dir / hex.substr(2);
  const std::string bytes = stored_loose_object(type, data);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throw Error(Exit::environment, fmt::format("cannot create {}: {}", dir.string(), std::strerror(errno)));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  // "tmp_obj_": the prefix git's prune and gc clean up, should a kill leave one behind.
  const fs::path tmp = dir / fmt::format("tmp_obj_abtrack_{:016x}", rng());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0) throw Error(Exit::environment, fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  if (int err = util::write_all(fd, bytes); err != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(Exit::environment, fmt::format("cannot write {}: {}", tmp.string(), std::strerror(err)));
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(Exit::environment, fmt::format("cannot write {}: {}", tmp.string(), std::strerror(err)));
  }
  // As git: a hard link, which never replaces an object another writer put there first; where
  // the file system has no hard links, a rename (the same bytes either way).
  if (::link(tmp.c_str(), final_path.c_str()) == 0 || errno == EEXIST) {
    ::unlink(tmp.c_str());
    return;
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(Exit::environment, fmt::format("cannot write {}: {}", final_path.string(), std::strerror(err)));
  }
}

}  // namespace abtrack::gitstore
