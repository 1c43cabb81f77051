#pragma once
// An exclusive advisory lock on a file (flock), held for the life of the object.
#include <chrono>
#include <filesystem>
#include <optional>

namespace abtrack::util {

// Released by the kernel when the process dies, so it can never go stale. Creates the file.
// With `max_wait`, throws Error(environment) naming the file once another holder has kept it
// that long; without, waits as long as it takes. Throws Error(environment) when the file cannot
// be opened or locked.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path, std::optional<std::chrono::seconds> max_wait = std::nullopt);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int m_fd = -1;
};

}  // namespace abtrack::util
