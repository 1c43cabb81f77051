#include "util/lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "util/error.hpp"

namespace abtrack::util {

FileLock::FileLock(const std::filesystem::path& path, std::optional<std::chrono::seconds> max_wait) {
  m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd < 0) throw Error(Exit::environment, fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  auto fail = [&](std::string what, std::string hint) {
    ::close(m_fd);
    m_fd = -1;
    throw Error(Exit::environment, std::move(what), std::move(hint));
  };
  if (!max_wait) {
    while (::flock(m_fd, LOCK_EX) != 0)
      if (errno != EINTR) fail(fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)), "");
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + *max_wait;
  while (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      fail(fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)), "");
    if (std::chrono::steady_clock::now() > deadline)
      fail(fmt::format("another abtrack has held {} for over {} s", path.string(), max_wait->count()),
           "wait for it to finish, or find it with: fuser " + path.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FileLock::~FileLock() {
  if (m_fd >= 0) ::close(m_fd);
}

}  // namespace abtrack::util
