#pragma once
// Whole-file reads and atomic writes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/expected.hpp"

namespace abtrack::util {

// Reads a whole file, or says why it cannot ("cannot read PATH: REASON", Exit::environment).
Expected<std::string> try_read_file(const std::filesystem::path& path);
// The same, throwing that failure as an Error.
std::string read_file(const std::filesystem::path& path);

// Writes all of `data` to the open descriptor `fd` (retrying short writes and EINTR). Returns 0,
// or the errno of the write that failed (ENOSPC for a write that wrote nothing).
int write_all(int fd, std::string_view data);
// The same at byte `offset` of the file (pwrite: the descriptor's position does not move).
int write_all_at(int fd, std::string_view data, std::int64_t offset);

// An open descriptor, closed when this goes (or on reset).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : m_fd(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return m_fd; }
  explicit operator bool() const { return m_fd >= 0; }
  // Gives the descriptor up (the caller closes it).
  int release() {
    int fd = m_fd;
    m_fd = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int m_fd = -1;
};

enum class Durability {
  durable,   // fsync before the rename: the content survives a power cut (Slurm submissions)
  ordinary,  // no fsync: for copies of what git already holds (the work-tree document)
};

// Writes `content` to `path` atomically: a temp file in the same folder, rename. A reader
// sees the old or the new content, never a half-written file. Creates missing parent
// folders. Keeps the mode of an existing file. Fails with Exit::environment and a message
// naming the path; write_file_atomic throws that failure as an Error.
Expected<> try_write_file_atomic(const std::filesystem::path& path, std::string_view content,
                                 Durability durability = Durability::durable);
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       Durability durability = Durability::durable);

// Whether `path`'s file name is one of write_file_atomic's temp files (".<name>.abtrack-<hex>.tmp"),
// which another abtrack may be writing in the same folder: never code, never an output.
bool is_atomic_temp(std::string_view path);

// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace abtrack::util
