#pragma once
// The index file (.git/index) with a few entries put in, from its bytes: what a commit's sync
// does for the record, the document and the plot it wrote. libgit2 1.5 re-reads, re-sorts and
// re-serialises every entry for that (git_index_add + git_index_write: ~0.6 ms with the 1000
// records of a long experiment); copying the other entries' bytes
// around the new ones does the same. Only the index formats it knows are handled (versions 2
// and 3 with SHA-1 ids); anything else is left to libgit2 (nullopt).
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abtrack::gitstore {

// The stat data git keeps per entry (each truncated to 32 bits, as on disk); the mode is always
// a regular file's (100644): a commit writes every file as a regular blob.
struct IndexStat {
  std::uint32_t ctime_s = 0, ctime_ns = 0, mtime_s = 0, mtime_ns = 0;
  std::uint32_t dev = 0, ino = 0, uid = 0, gid = 0, size = 0;
};

// A stage-0 entry to put in (or to replace the one of that path): a path relative to the work
// tree with '/' separators, the stat data of the file just written and its blob id.
struct RawIndexEntry {
  std::string path;
  IndexStat stat;
  std::array<std::uint8_t, 20> id{};
};

// A time as the index stores it.
struct IndexTime {
  std::uint32_t s = 0, ns = 0;
};

// Asked for each entry kept whose file changed no earlier than the old index was written, in
// whole seconds ("racily clean": git cannot tell from its stat data whether it changed since,
// and git compares seconds only unless built with USE_NSEC): true when the
// file in the work tree still has the entry's content (path, mode, blob id). An entry it says
// false for is written with size 0, so that git compares its content next time, as git and
// libgit2 do when they write an index.
using StillClean = std::function<bool(std::string_view path, std::uint32_t mode, const std::uint8_t* id)>;

// The index `old` (the file's bytes; `old_mtime` its modification time) with `entries` put in
// as stage-0 regular-file entries in git's order (paths bytewise), each replacing the entry of
// its path, every other entry kept byte for byte (size 0 where StillClean says so), the
// cache-tree extension (TREE) kept with the folders above each new entry marked invalid, and
// other optional extensions dropped as libgit2 drops them; a new trailer checksum. nullopt, for
// the caller to let libgit2 do it, when `old` is not an index this handles: not version 2 or 3,
// a checksum that does not match (or is zero), a malformed entry or extension, a mandatory
// extension (a split or sparse index), conflict names or resolve-undo data (NAME, REUC); or
// when a path is not a plain relative path, is given twice, has conflict stages, an entry with
// extended or assume-valid flags, or clashes with an entry as file and folder.
std::optional<std::string> raw_index_with_entries(std::string_view old, IndexTime old_mtime,
                                                  std::vector<RawIndexEntry> entries, const StillClean& still_clean);

// For a status walk that leaves the top-level folders `folders` out: the index `raw` (a file's
// bytes) without its entries under any of them ("runs": every "runs/..." path) and without
// extensions, every other entry kept byte for byte (stat data, smudged sizes, conflict stages,
// extended flags), with a new trailer checksum. libgit2 parses every entry of the index it
// reads (an allocation, a path check and a hash-map insert each: ~0.45 ms for the 1000 records
// of a long experiment); a walk that never looks at them can read this instead. nullopt when
// `raw` is not an index this handles (as raw_index_with_entries: not version 2 or 3, a checksum
// that does not match, a malformed entry or extension, a mandatory extension) or when it has
// conflict names or resolve-undo data (NAME, REUC), which libgit2's status reads.
// With IndexChecksum::trusted the trailer is not checked (the caller checked these bytes, or
// wants only the structure checked).
enum class IndexChecksum { check, trusted };
std::optional<std::string> raw_index_without(std::string_view raw, const std::vector<std::string>& folders,
                                             IndexChecksum checksum = IndexChecksum::check);

// Whether raw_index_without handles the index `raw` (its checks, without the copy).
bool raw_index_handled(std::string_view raw, IndexChecksum checksum = IndexChecksum::check);

// How many entries the index `raw` has, and how many of them lie under `folders`, read without
// checking the trailer (both 0 when it is not one raw_index_without could handle): whether
// leaving them out is worth a copy.
struct IndexCounts {
  std::size_t entries = 0, under = 0;
};
IndexCounts raw_index_counts(std::string_view raw, const std::vector<std::string>& folders);

// The SHA-1 of `data` for a file's trailer (not an object id: no collision detection).
std::array<std::uint8_t, 20> file_checksum(std::string_view data);

}  // namespace abtrack::gitstore
