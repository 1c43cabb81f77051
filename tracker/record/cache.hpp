#pragma once
// A cache of parsed records keyed by blob id, kept in an append-only binary file, so commands
// read and parse only the records that are new since the last command (a history of
// thousands of runs stays cheap). Only a cache: the records in git are the truth.
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "record/record.hpp"

namespace abtrack::record {

// How much of a record RecordCache::get decodes: its header (experiment, run, data.id, cell,
// data.outcome, code) or everything the cache keeps.
enum class Part { header, all };

class RecordCache {
 public:
  // Reads the cache file when it exists and indexes its frames by blob id (a frame is decoded
  // only when asked for). A missing or foreign file is an empty cache; a torn tail is dropped
  // (a process killed while appending).
  explicit RecordCache(std::filesystem::path file);
  // The record of blob `oid`, decoded from its frame (only the header for Part::header: the
  // other fields stay empty); nullopt when not cached (or when its frame is corrupt: the caller
  // parses the record again and inserts it).
  std::optional<Record> get(const std::string& oid, Part part = Part::all) const;
  // Adds a parsed record (appended to the file on save()).
  void insert(const std::string& oid, const Record& r);
  // Appends what was added, in one write. Failing to write only costs speed: never throws.
  void save() noexcept;

 private:
  struct Span {
    std::size_t offset, size;  // of a frame's payload in m_data
  };
  std::filesystem::path m_file;
  std::string m_data;          // the file's frames, then the frames added since
  std::size_t m_saved = 0;     // bytes of m_data that are in the file
  std::unordered_map<std::string, Span> m_frames;  // blob id -> its latest frame
};

// The fields a document, status and comparisons use, as one binary frame, and back (the
// header alone for Part::header: its own checksum lets it be read without the rest).
// decode_frame throws std::runtime_error on malformed input.
std::string encode_frame(const std::string& oid, const Record& r);
std::pair<std::string, Record> decode_frame(std::string_view payload, Part part = Part::all);

}  // namespace abtrack::record
