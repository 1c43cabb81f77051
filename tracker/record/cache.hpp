#pragma once
// A cache of parsed records keyed by blob id, kept in a file, so commands read only the
// records that are new since the last one (history of thousands of runs stays cheap).
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "record/record.hpp"

namespace abtrack::record {

class RecordCache {
 public:
  // Reads the cache file when it exists; a missing, foreign or corrupt file is an empty cache
  // (it is only a cache: the records in git are the truth).
  explicit RecordCache(std::filesystem::path file);
  // The record of blob `oid`, if cached.
  const Record* find(const std::string& oid) const;
  // Adds a parsed record.
  void insert(const std::string& oid, Record r);
  // Writes the file atomically when something was added. Failing to write only costs speed:
  // never throws.
  void save() noexcept;

 private:
  std::filesystem::path m_file;
  std::map<std::string, Record> m_records;
  bool m_dirty = false;
};

// The fields of a record that documents, status and comparisons use, as compact JSON, and back.
std::string to_cache_json(const Record& r);
Record from_cache_json(const std::string& text);

}  // namespace abtrack::record
