#pragma once
// A git tree object's bytes with regular files put in, without parsing it into entries: what a
// commit does to runs/<experiment>/, a folder of thousands of records that gains one. libgit2's
// git_tree_create_updated loads such a folder into a tree builder (an allocation and a hash-map
// insert per entry), sorts it and writes it out again: ~0.4 ms at 1000 entries and several at
// 10,000; copying the bytes around the insertion point does the same.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace abtrack::gitstore {

// A file to put in: its name within the folder and its blob id (20 raw bytes).
struct RawBlob {
  std::string name;
  std::array<std::uint8_t, 20> id{};
};

// The tree `raw` (a tree object's content, SHA-1 ids) with each of `files` added as a regular
// file (mode 100644), or replacing the regular file of that name, in git's tree order (names
// compared bytewise, a folder's as if it ended in '/'). nullopt, for the caller to use libgit2
// instead, when `raw` is not a well-formed tree, when a name is not a plain file name (empty,
// ".", "..", ".git", or containing '/' or NUL), when two files have the same name, or when the
// name is taken by something that is not a regular non-executable file.
std::optional<std::string> raw_tree_with_files(std::string_view raw, std::vector<RawBlob> files);

// How many entries `raw` has, or nullopt when it is not a well-formed tree.
std::optional<std::size_t> raw_tree_entries(std::string_view raw);

// Calls fn(mode, name, id) for each entry of `raw` in order (mode as written, e.g. "100644" or
// "40000"; id its 20 raw bytes); false, before any call, when `raw` is not a well-formed tree.
bool for_each_raw_tree_entry(std::string_view raw,
                             const std::function<void(std::string_view mode, std::string_view name, const std::uint8_t* id)>& fn);

}  // namespace abtrack::gitstore
