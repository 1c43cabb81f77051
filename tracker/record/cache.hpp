#pragma once
// A cache of parsed records keyed by blob id, kept in an append-only binary file, so commands
// read and parse only the records that are new since the last command (a history of
// thousands of runs stays cheap). Only a cache: the records in git are the truth.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record/record.hpp"

namespace abtrack::record {

// How much of a record RecordCache::get decodes: its header (experiment, run, data.id, cell,
// data.outcome, code) or everything the cache keeps.
enum class Part { header, all };

// A record's header (see Part::header) as views into the bytes of its cache frame, valid while
// they are (a RecordCache keeps its frames for its lifetime): what a step needs of every record
// of the history, read without building a Record (a thousand 824-byte Records were most of a
// step's growth with history, in page faults of fresh memory).
struct HeaderView {
  std::string_view experiment;
  int run = 0;
  std::string_view id;  // Record::data.id
  runner::Outcome outcome = runner::Outcome::invalid;
  std::string_view commit;  // Record::code
  bool dirty = false;
  std::string_view snapshot;
  std::string_view tree;
  std::string_view recipe;
  std::string_view revision;
  double command_s = 0;         // Record::data.command_s
  std::string_view gpus;        // record::gpu_kinds_key
  std::uint32_t cell_size = 0;  // pairs in `cell`
  std::string_view cell;        // the cell's axis -> value pairs, encoded (use value())
  // The value of the first pair naming `axis`, nullopt when none does.
  std::optional<std::string_view> value(std::string_view axis) const;
  // Whether both ran the same code (Code::same_identity).
  bool same_identity(const HeaderView& o) const {
    if ((dirty && snapshot.empty()) || (o.dirty && o.snapshot.empty())) return false;
    if (!recipe.empty() && !o.recipe.empty() && recipe != o.recipe) return false;
    if (!tree.empty() && !o.tree.empty()) return tree == o.tree;
    return commit == o.commit && snapshot == o.snapshot;
  }
};

class RecordCache {
 public:
  // Maps the cache file (read-only) when it exists and indexes its frames by blob id (a frame
  // is decoded only when asked for). A missing or foreign file is an empty cache; a torn tail
  // is dropped (a process killed while appending).
  explicit RecordCache(std::filesystem::path file);
  ~RecordCache();
  RecordCache(const RecordCache&) = delete;
  RecordCache& operator=(const RecordCache&) = delete;
  // The record of blob `oid`, decoded from its frame (only the header for Part::header: the
  // other fields stay empty); nullopt when not cached (or when its frame is corrupt: the caller
  // parses the record again and inserts it).
  std::optional<Record> get(std::string_view oid, Part part = Part::all) const;
  // The same, decoded into `into` (a default-constructed record: a step decodes a thousand
  // headers straight into its vector, without moving each 1.2 KB record twice); false, with
  // `into` reset, when not cached or corrupt.
  bool get(std::string_view oid, Part part, Record& into) const;
  // The header of blob `oid` as views into its frame (valid while this cache lives), nullopt
  // when not cached or when the header is corrupt.
  std::optional<HeaderView> header(std::string_view oid) const;
  // Adds a parsed record (appended to the file on save()).
  void insert(std::string_view oid, const Record& r);
  // Appends what was added, in one write. Failing to write only costs speed: never throws.
  void save() noexcept;

 private:
  struct Span {
    const char* data;  // a frame's payload (after its length and checksum)
    std::size_t size;
  };
  std::filesystem::path m_file;
  const char* m_map = nullptr;  // the file as it was when opened (a private read-only mapping)
  std::size_t m_map_size = 0;
  std::deque<std::string> m_added;  // frames added since (a deque: their bytes never move)
  std::size_t m_saved = 0;          // how many of m_added are in the file
  // Blob id (viewed in its frame) -> latest frame: an open-addressing table (linear probing,
  // power-of-two size, at most half full) instead of a std::unordered_map's node allocation
  // per frame and 40-byte hash per lookup; blob ids are uniformly random, so 16 of their hex
  // digits are hash enough.
  struct Slot {
    std::string_view oid;  // empty: a free slot
    Span frame{};
  };
  std::vector<Slot> m_slots;
  std::size_t m_used = 0;
  const Slot* find(std::string_view oid) const;
  void put(std::string_view oid, Span frame);
};

// The fields a document, status and comparisons use, as one binary frame, and back (the
// header alone for Part::header: its own checksum lets it be read without the rest).
// decode_frame throws Error on malformed input.
std::string encode_frame(std::string_view oid, const Record& r);
std::pair<std::string, Record> decode_frame(std::string_view payload, Part part = Part::all);
// The same into `r` (default-constructed); the blob id, a view into `payload`, or why the frame
// is malformed (`r` is then half-decoded).
Expected<std::string_view> try_decode_frame(std::string_view payload, Record& r, Part part = Part::all);
// A frame's header (checksum checked) as views into `payload`; the blob id, or why the frame is
// malformed. decode_header throws that failure as an Error.
Expected<std::string_view> try_decode_header(std::string_view payload, HeaderView& h);
std::string_view decode_header(std::string_view payload, HeaderView& h);

}  // namespace abtrack::record
