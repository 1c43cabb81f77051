#pragma once
// An advisory lock on a file (flock), exclusive or shared, held for the life of the object.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

namespace abtrack::util {

enum class LockMode { exclusive, shared };

// Released by the kernel when the process dies, so it can never go stale. Creates the file.
// With `max_wait`, throws Error(environment) naming the file once another holder has kept it
// that long; without, waits as long as it takes. Throws Error(environment) when the file cannot
// be opened or locked. A lock file that another holder removes (or replaces) while this one
// waits is opened again, so removing a lock file while holding it is safe: whoever gets it next
// holds the file that is there.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path, std::optional<std::chrono::seconds> max_wait = std::nullopt,
                    LockMode mode = LockMode::exclusive);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // The lock when nobody holds it in a conflicting mode now, else nullptr (never waits).
  static std::unique_ptr<FileLock> try_lock(const std::filesystem::path& path, LockMode mode = LockMode::exclusive);

 private:
  FileLock() = default;
  // Opens `path` and takes the lock (waiting until `deadline`, or not at all when `wait` is
  // false): true when held, false when another holds it and the wait is over.
  bool acquire(const std::filesystem::path& path, LockMode mode, bool wait,
               std::optional<std::chrono::steady_clock::time_point> deadline,
               std::optional<std::chrono::seconds> max_wait);
  int m_fd = -1;
};

}  // namespace abtrack::util
