#pragma once
// A durable journal of byte entries, kept in reusable slot files (DIR/slot-0, slot-1, ...): a
// measurement is journaled before its commit and survives a crash or a power cut until then.
//
// A slot holds at most one entry: a header line "abtrack-journal 1 <bytes> <sha256>\n" and the
// entry's bytes. An entry is written in place over a free slot and made durable with fdatasync:
// the slot keeps its size and its blocks from one entry to the next, so the sync writes the
// entry's blocks and needs no metadata commit of the file system (a new file, fsynced and
// renamed, cost 4-5x more, and on a file system with a journal it also held up the commit's
// own file writes). A slot is freed by overwriting the header's first byte; an entry that was
// cut short (a process killed while writing it) fails its checksum and counts as no entry.
// The process that journals an entry holds its slot's flock until it is done with it; a slot
// that holds an entry and no lock was left by a process that died.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "util/files.hpp"

namespace abtrack::util {

class JournalSlot {
 public:
  // Takes a free slot of `dir` (created with its folders when missing) that no other process
  // holds, writes `content` into it and starts its fdatasync on a thread (wait()). Throws
  // Error(environment) when the entry cannot be written.
  JournalSlot(const std::filesystem::path& dir, std::string_view content);
  // Waits for the sync; unlocks the slot. The entry stays unless clear() was called.
  ~JournalSlot();
  JournalSlot(const JournalSlot&) = delete;
  JournalSlot& operator=(const JournalSlot&) = delete;
  // Waits for the sync: 0 once the entry is durable, else the errno of the sync.
  int wait();
  // The entry was committed elsewhere: the slot is free again (no sync: an entry found again
  // after a power cut is one its reader already has, and a reader must expect that).
  void clear();
  const std::filesystem::path& file() const { return m_file; }

 private:
  std::filesystem::path m_file;
  UniqueFd m_fd;  // declared before m_sync: the sync thread is joined before the slot closes
  int m_sync_errno = 0;
  std::thread m_sync;
};

// The entry a slot file's bytes hold, nullopt when none (free, cut short, or not a slot).
std::optional<std::string> journal_entry_of(std::string_view slot_bytes);

// Calls fn(where, content) for every entry of `dir` that no live process holds, in slot
// order, with its slot locked meanwhile; when fn returns true (the entry is committed) the
// slot is freed. Entries of earlier versions ("<id>.json" files, one per entry) are passed
// too, after the slots, and removed when fn returns true. A missing folder has no entries.
void for_each_journal_entry(const std::filesystem::path& dir,
                            const std::function<bool(const std::filesystem::path&, const std::string&)>& fn);

}  // namespace abtrack::util
