#include "gitstore/raw_tree.hpp"

#include <algorithm>
#include <cstring>

namespace abtrack::gitstore {
namespace {

constexpr std::size_t kIdBytes = 20;
constexpr std::string_view kFileMode = "100644";

// One entry of a tree object: "<mode> <name>\0<20-byte id>".
struct Entry {
  std::string_view mode;
  std::string_view name;
  std::size_t begin = 0, end = 0;  // the entry's bytes in the tree
  bool folder() const { return mode == "40000"; }
};

// The entry at `pos`, or nullopt when the bytes there are not one.
std::optional<Entry> entry_at(std::string_view raw, std::size_t pos) {
  Entry e;
  e.begin = pos;
  const std::size_t space = raw.find(' ', pos);
  if (space == std::string_view::npos || space == pos || space - pos > 6) return std::nullopt;
  e.mode = raw.substr(pos, space - pos);
  if (!std::all_of(e.mode.begin(), e.mode.end(), [](char c) { return c >= '0' && c <= '7'; })) return std::nullopt;
  const std::size_t nul = raw.find('\0', space + 1);
  if (nul == std::string_view::npos || nul == space + 1) return std::nullopt;
  e.name = raw.substr(space + 1, nul - space - 1);
  if (raw.size() - (nul + 1) < kIdBytes) return std::nullopt;
  e.end = nul + 1 + kIdBytes;
  return e;
}

// git's tree order: bytewise, a folder's name compared as if it ended in '/'.
int compare(std::string_view a, bool a_folder, std::string_view b, bool b_folder) {
  const std::size_t n = std::min(a.size(), b.size());
  if (int c = n ? std::memcmp(a.data(), b.data(), n) : 0; c != 0) return c;
  const unsigned char ca = a.size() > n ? static_cast<unsigned char>(a[n]) : (a_folder ? '/' : '\0');
  const unsigned char cb = b.size() > n ? static_cast<unsigned char>(b[n]) : (b_folder ? '/' : '\0');
  return static_cast<int>(ca) - static_cast<int>(cb);
}

std::string_view key(const RawBlob& f) { return f.name; }
std::string_view key(std::string_view n) { return n; }

bool plain_name(std::string_view n) {
  return !n.empty() && n != "." && n != ".." && n != ".git" && n.find('/') == std::string_view::npos &&
         n.find('\0') == std::string_view::npos;
}

void append_file(std::string& out, const RawBlob& f) {
  out.append(kFileMode);
  out.push_back(' ');
  out.append(f.name);
  out.push_back('\0');
  out.append(reinterpret_cast<const char*>(f.id.data()), f.id.size());
}

}  // namespace

std::optional<std::size_t> raw_tree_entries(std::string_view raw) {
  std::size_t n = 0;
  for (std::size_t pos = 0; pos < raw.size(); ++n) {
    auto e = entry_at(raw, pos);
    if (!e) return std::nullopt;
    pos = e->end;
  }
  return n;
}

bool for_each_raw_tree_entry(std::string_view raw,
                             const std::function<void(std::string_view mode, std::string_view name, const std::uint8_t* id)>& fn) {
  if (!raw_tree_entries(raw)) return false;
  for (std::size_t pos = 0; pos < raw.size();) {
    auto e = entry_at(raw, pos);
    fn(e->mode, e->name, reinterpret_cast<const std::uint8_t*>(raw.data() + e->end - kIdBytes));
    pos = e->end;
  }
  return true;
}

std::optional<std::string> raw_tree_with_files(std::string_view raw, std::vector<RawBlob> files) {
  for (const auto& f : files)
    if (!plain_name(f.name)) return std::nullopt;
  std::sort(files.begin(), files.end(), [](const RawBlob& a, const RawBlob& b) { return a.name < b.name; });
  if (std::adjacent_find(files.begin(), files.end(), [](const RawBlob& a, const RawBlob& b) { return a.name == b.name; }) !=
      files.end())
    return std::nullopt;
  std::string out;
  out.reserve(raw.size() + files.size() * 64);
  std::size_t next = 0;  // the first file not yet written
  std::optional<Entry> previous;
  for (std::size_t pos = 0; pos < raw.size();) {
    auto e = entry_at(raw, pos);
    if (!e) return std::nullopt;
    // A tree out of order is one libgit2 should handle (or refuse), not this.
    if (previous && compare(previous->name, previous->folder(), e->name, e->folder()) >= 0) return std::nullopt;
    // A folder named as one of the files: the file would sort before it, and both would stay.
    if (e->folder() && std::binary_search(files.begin(), files.end(), e->name,
                                          [](const auto& a, const auto& b) { return key(a) < key(b); }))
      return std::nullopt;
    // Files that sort before this entry go first; one with its name replaces it.
    bool replaced = false;
    while (next < files.size()) {
      const int c = compare(files[next].name, false, e->name, e->folder());
      if (c > 0) break;
      if (c == 0) {
        if (e->mode != kFileMode) return std::nullopt;  // a folder, link or executable of that name
        replaced = true;
      }
      append_file(out, files[next++]);
    }
    if (!replaced) out.append(raw.substr(e->begin, e->end - e->begin));
    previous = e;
    pos = e->end;
  }
  while (next < files.size()) append_file(out, files[next++]);
  return out;
}

}  // namespace abtrack::gitstore
