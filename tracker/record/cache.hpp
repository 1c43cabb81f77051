#pragma once
// A cache of parsed records keyed by blob id, kept in an append-only binary file, so commands
// read and parse only the records that are new since the last command (a history of
// thousands of runs stays cheap). Only a cache: the records in git are the truth.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "record/record.hpp"

namespace abtrack::record {

class RecordCache {
 public:
  // Reads the cache file when it exists. A missing or foreign file is an empty cache; a torn
  // or corrupt tail is dropped (a process killed while appending).
  explicit RecordCache(std::filesystem::path file);
  // The record of blob `oid`, if cached.
  const Record* find(const std::string& oid) const;
  // Adds a parsed record (appended to the file on save()).
  void insert(const std::string& oid, Record r);
  // Appends what was added, in one write. Failing to write only costs speed: never throws.
  void save() noexcept;

 private:
  std::filesystem::path m_file;
  std::map<std::string, Record> m_records;
  std::vector<std::string> m_added;
};

// The fields a document, status and comparisons use, as one binary frame, and back.
// decode_frame throws std::runtime_error on malformed input.
std::string encode_frame(const std::string& oid, const Record& r);
std::pair<std::string, Record> decode_frame(std::string_view payload);

}  // namespace abtrack::record
