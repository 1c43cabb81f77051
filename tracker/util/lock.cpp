#include "util/lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "util/error.hpp"

namespace abtrack::util {

bool FileLock::acquire(const std::filesystem::path& path, LockMode mode, bool wait,
                       std::optional<std::chrono::steady_clock::time_point> deadline,
                       std::optional<std::chrono::seconds> max_wait) {
  const int op = mode == LockMode::shared ? LOCK_SH : LOCK_EX;
  for (;;) {
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0)
      throw Error(Exit::environment, fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
    auto fail = [&](std::string what, std::string hint) {
      ::close(m_fd);
      m_fd = -1;
      throw Error(Exit::environment, std::move(what), std::move(hint));
    };
    if (wait && !deadline) {
      while (::flock(m_fd, op) != 0)
        if (errno != EINTR) fail(fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)), "");
    } else {
      while (::flock(m_fd, op | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
          fail(fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)), "");
        if (!wait) {
          ::close(m_fd);
          m_fd = -1;
          return false;
        }
        if (std::chrono::steady_clock::now() > *deadline)
          fail(
              fmt::format("another abtrack has held {} for over {} s", path.string(), max_wait ? max_wait->count() : 0),
              "wait for it to finish, or find it with: fuser " + path.string());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    // The holder before us may have removed or replaced the file: then ours locks nothing
    // anybody else will see, and the file that is there now is the one to lock.
    struct stat held {
    }, there{};
    if (::fstat(m_fd, &held) == 0 && ::stat(path.c_str(), &there) == 0 && held.st_dev == there.st_dev &&
        held.st_ino == there.st_ino)
      return true;
    ::close(m_fd);
    m_fd = -1;
  }
}

FileLock::FileLock(const std::filesystem::path& path, std::optional<std::chrono::seconds> max_wait, LockMode mode) {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (max_wait) deadline = std::chrono::steady_clock::now() + *max_wait;
  acquire(path, mode, true, deadline, max_wait);
}

std::unique_ptr<FileLock> FileLock::try_lock(const std::filesystem::path& path, LockMode mode) {
  std::unique_ptr<FileLock> lock(new FileLock());
  if (!lock->acquire(path, mode, false, std::nullopt, std::nullopt)) return nullptr;
  return lock;
}

FileLock::~FileLock() {
  if (m_fd >= 0) ::close(m_fd);
}

}  // namespace abtrack::util
