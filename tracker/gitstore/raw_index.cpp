#include "gitstore/raw_index.hpp"

#include <algorithm>
#include <cstring>

#ifdef ABTRACK_GIT2_STATIC
// The low-level interface: OpenSSL 3's one-shot SHA1() loads its providers first (~1 ms).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#else
#include <mbedtls/sha1.h>
#endif

namespace abtrack::gitstore {
namespace {

constexpr std::size_t kIdBytes = 20;
constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kStatBytes = 40;
constexpr std::uint16_t kAssumeValid = 0x8000;
constexpr std::uint16_t kExtended = 0x4000;
constexpr std::uint16_t kNameMask = 0x0fff;
constexpr std::uint32_t kTypeMask = 0170000;
constexpr std::uint32_t kGitlink = 0160000;
constexpr std::uint32_t kRegularFile = 0100644;

std::uint32_t be32(std::string_view s, std::size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}
std::uint16_t be16(std::string_view s, std::size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
void put32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}
void put16(std::string& out, std::uint16_t v) {
  const char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 2);
}

// One entry of the file: its bytes [begin, end) and what the merge needs of it.
struct Entry {
  std::size_t begin = 0, end = 0;
  std::string_view path;
  std::uint16_t flags = 0;
  int stage() const { return (flags >> 12) & 3; }
};

std::optional<Entry> entry_at(std::string_view raw, std::size_t pos, std::size_t limit, std::uint32_t version) {
  Entry e;
  e.begin = pos;
  if (limit - pos < kStatBytes + kIdBytes + 2) return std::nullopt;
  e.flags = be16(raw, pos + kStatBytes + kIdBytes);
  std::size_t fixed = kStatBytes + kIdBytes + 2;
  if (e.flags & kExtended) {
    if (version < 3) return std::nullopt;
    fixed += 2;
  }
  const std::size_t path_at = pos + fixed;
  const std::size_t nul = raw.find('\0', path_at);
  if (nul == std::string_view::npos || nul >= limit || nul == path_at) return std::nullopt;
  e.path = raw.substr(path_at, nul - path_at);
  const std::size_t named = e.flags & kNameMask;
  if (named != std::min<std::size_t>(e.path.size(), kNameMask)) return std::nullopt;
  // Versions 2 and 3 pad each entry with 1 to 8 NULs to a multiple of 8 bytes.
  const std::size_t size = (fixed + e.path.size() + 8) & ~std::size_t{7};
  if (limit - pos < size) return std::nullopt;
  e.end = pos + size;
  return e;
}

bool plain_path(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.back() == '/' || p.find('\0') != std::string_view::npos) return false;
  for (std::size_t at = 0; at <= p.size();) {
    std::size_t slash = p.find('/', at);
    if (slash == std::string_view::npos) slash = p.size();
    std::string_view part = p.substr(at, slash - at);
    if (part.empty() || part == "." || part == ".." || part == ".git") return false;
    at = slash + 1;
  }
  return true;
}

void append_entry(std::string& out, const RawIndexEntry& e) {
  const IndexStat& s = e.stat;
  for (std::uint32_t v : {s.ctime_s, s.ctime_ns, s.mtime_s, s.mtime_ns, s.dev, s.ino, kRegularFile, s.uid, s.gid, s.size})
    put32(out, v);
  out.append(reinterpret_cast<const char*>(e.id.data()), e.id.size());
  put16(out, static_cast<std::uint16_t>(std::min<std::size_t>(e.path.size(), kNameMask)));
  out.append(e.path);
  const std::size_t size = (kStatBytes + kIdBytes + 2 + e.path.size() + 8) & ~std::size_t{7};
  out.append(size - (kStatBytes + kIdBytes + 2 + e.path.size()), '\0');
}

// The cache-tree extension: per folder, "<name>\0<entries> <subtrees>\n" and the tree id when
// valid (entries >= 0), then its subtrees, depth first.
struct CacheTree {
  std::string_view name;
  std::string_view count;  // as written ("-1": invalid)
  std::string_view subtrees;
  std::string_view id;  // empty when invalid
  std::vector<CacheTree> children;
};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool parse_cache_tree(std::string_view data, std::size_t& pos, CacheTree& node, int depth) {
  if (depth > 4096) return false;
  const std::size_t nul = data.find('\0', pos);
  if (nul == std::string_view::npos) return false;
  node.name = data.substr(pos, nul - pos);
  const std::size_t space = data.find(' ', nul + 1);
  const std::size_t newline = data.find('\n', nul + 1);
  if (space == std::string_view::npos || newline == std::string_view::npos || space > newline) return false;
  node.count = data.substr(nul + 1, space - nul - 1);
  node.subtrees = data.substr(space + 1, newline - space - 1);
  const bool invalid = node.count.starts_with('-');
  if (!all_digits(invalid ? node.count.substr(1) : node.count) || !all_digits(node.subtrees) || node.subtrees.size() > 9)
    return false;
  pos = newline + 1;
  if (!invalid) {
    if (data.size() - pos < kIdBytes) return false;
    node.id = data.substr(pos, kIdBytes);
    pos += kIdBytes;
  }
  const std::size_t n = std::stoul(std::string(node.subtrees));
  node.children.resize(n);
  for (auto& child : node.children)
    if (!parse_cache_tree(data, pos, child, depth + 1)) return false;
  return true;
}

void invalidate(CacheTree& root, std::string_view path) {
  CacheTree* node = &root;
  for (;;) {
    node->count = "-1";
    node->id = {};
    const std::size_t slash = path.find('/');
    if (slash == std::string_view::npos) return;  // the file itself is no folder
    const std::string_view folder = path.substr(0, slash);
    auto it = std::find_if(node->children.begin(), node->children.end(), [&](const CacheTree& c) { return c.name == folder; });
    if (it == node->children.end()) return;
    node = &*it;
    path.remove_prefix(slash + 1);
  }
}

void write_cache_tree(std::string& out, const CacheTree& node) {
  out.append(node.name);
  out.push_back('\0');
  out.append(node.count);
  out.push_back(' ');
  out.append(node.subtrees);
  out.push_back('\n');
  out.append(node.id);
  for (const auto& child : node.children) write_cache_tree(out, child);
}

}  // namespace

std::array<std::uint8_t, 20> file_checksum(std::string_view data) {
  std::array<std::uint8_t, 20> out{};
#ifdef ABTRACK_GIT2_STATIC
  SHA_CTX ctx;
  SHA1_Init(&ctx);
  SHA1_Update(&ctx, data.data(), data.size());
  SHA1_Final(out.data(), &ctx);
#else
  mbedtls_sha1_ret(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
#endif
  return out;
}

namespace {

// The version of `raw` when it is a version 2 or 3 index ("DIRC"), else 0.
std::uint32_t handled_version(std::string_view raw) {
  if (raw.size() < kHeaderBytes + kIdBytes || raw.substr(0, 4) != "DIRC") return 0;
  const std::uint32_t version = be32(raw, 4);
  return version == 2 || version == 3 ? version : 0;  // 4 compresses paths; others are unknown
}

// Whether the trailer of `raw` is the SHA-1 of the rest: not torn, not corrupt, not written with
// index.skipHash (a zero trailer).
bool checksum_matches(std::string_view raw) {
  const std::size_t body = raw.size() - kIdBytes;
  const auto sum = file_checksum(raw.substr(0, body));
  return std::memcmp(sum.data(), raw.data() + body, kIdBytes) == 0;
}

bool under_any(std::string_view path, const std::vector<std::string>& folders) {
  for (const auto& f : folders)
    if (path.size() > f.size() && path.starts_with(f) && path[f.size()] == '/') return true;
  return false;
}

void set_count(std::string& out, std::uint32_t n) {
  out[8] = static_cast<char>(n >> 24);
  out[9] = static_cast<char>(n >> 16);
  out[10] = static_cast<char>(n >> 8);
  out[11] = static_cast<char>(n);
}

}  // namespace

IndexCounts raw_index_counts(std::string_view raw, const std::vector<std::string>& folders) {
  const std::uint32_t version = handled_version(raw);
  if (version == 0) return {};
  const std::size_t body = raw.size() - kIdBytes;
  IndexCounts counts;
  std::size_t pos = kHeaderBytes;
  for (std::uint32_t i = 0, count = be32(raw, 8); i < count; ++i) {
    auto e = entry_at(raw, pos, body, version);
    if (!e) return {};
    counts.under += under_any(e->path, folders);
    pos = e->end;
  }
  counts.entries = be32(raw, 8);
  return counts;
}

namespace {

// raw_index_without's work: the copy goes to `out` when it is not null (only the checks when it
// is); false when raw_index_without would return nullopt.
bool copy_index_without(std::string_view raw, const std::vector<std::string>& folders, IndexChecksum checksum, std::string* out) {
  const std::uint32_t version = handled_version(raw);
  if (version == 0 || (checksum == IndexChecksum::check && !checksum_matches(raw))) return false;
  const std::size_t body = raw.size() - kIdBytes;
  if (out) {
    out->reserve(raw.size());
    out->append(raw.substr(0, 8));
    put32(*out, 0);  // the entry count, set below
  }
  std::uint32_t written = 0;
  std::size_t pos = kHeaderBytes;
  std::string_view previous;
  for (std::uint32_t i = 0, count = be32(raw, 8); i < count; ++i) {
    auto e = entry_at(raw, pos, body, version);
    if (!e || (i > 0 && e->path < previous)) return false;
    previous = e->path;
    pos = e->end;
    if (!out || under_any(e->path, folders)) continue;
    out->append(raw.substr(e->begin, e->end - e->begin));
    ++written;
  }
  // Extensions: all dropped (a cache tree, an untracked cache, fsmonitor data: what a status
  // walk does without); what libgit2's status reads, or must not ignore, is left to libgit2.
  while (pos < body) {
    if (body - pos < 8) return false;
    const std::string_view sig = raw.substr(pos, 4);
    const std::uint32_t size = be32(raw, pos + 4);
    if (body - pos - 8 < size) return false;
    pos += 8 + size;
    if (sig[0] < 'A' || sig[0] > 'Z' || sig == "REUC" || sig == "NAME") return false;
  }
  if (pos != body) return false;
  if (out) {
    set_count(*out, written);
    const auto trailer = file_checksum(*out);
    out->append(reinterpret_cast<const char*>(trailer.data()), trailer.size());
  }
  return true;
}

}  // namespace

std::optional<std::string> raw_index_without(std::string_view raw, const std::vector<std::string>& folders,
                                             IndexChecksum checksum) {
  std::string out;
  if (!copy_index_without(raw, folders, checksum, &out)) return std::nullopt;
  return out;
}

bool raw_index_handled(std::string_view raw, IndexChecksum checksum) { return copy_index_without(raw, {}, checksum, nullptr); }

std::optional<std::string> raw_index_with_entries(std::string_view old, IndexTime old_mtime,
                                                  std::vector<RawIndexEntry> entries, const StillClean& still_clean) {
  const std::uint32_t version = handled_version(old);
  if (version == 0 || !checksum_matches(old)) return std::nullopt;
  const std::size_t body = old.size() - kIdBytes;

  for (const auto& e : entries)
    if (!plain_path(e.path)) return std::nullopt;
  std::sort(entries.begin(), entries.end(), [](const RawIndexEntry& a, const RawIndexEntry& b) { return a.path < b.path; });
  if (std::adjacent_find(entries.begin(), entries.end(),
                         [](const RawIndexEntry& a, const RawIndexEntry& b) { return a.path == b.path; }) != entries.end())
    return std::nullopt;

  std::string out;
  out.reserve(old.size() + entries.size() * 128);
  out.append(old.substr(0, 8));
  put32(out, 0);  // the entry count, set below

  const std::uint32_t count = be32(old, 8);
  std::uint32_t written = 0;
  std::size_t next = 0;  // the first new entry not yet written
  std::size_t pos = kHeaderBytes;
  std::string_view previous;
  for (std::uint32_t i = 0; i < count; ++i) {
    auto e = entry_at(old, pos, body, version);
    if (!e || (i > 0 && e->path < previous)) return std::nullopt;
    previous = e->path;
    pos = e->end;
    for (const auto& n : entries) {
      // A file where a folder of a new path would go, or files under a new path's name.
      if (n.path.size() > e->path.size() && n.path.starts_with(e->path) && n.path[e->path.size()] == '/') return std::nullopt;
      if (e->path.size() > n.path.size() && e->path.starts_with(n.path) && e->path[n.path.size()] == '/') return std::nullopt;
    }
    while (next < entries.size() && entries[next].path < e->path) {
      append_entry(out, entries[next++]);
      ++written;
    }
    if (next < entries.size() && entries[next].path == e->path) {
      if (e->stage() != 0 || (e->flags & (kAssumeValid | kExtended))) return std::nullopt;
      append_entry(out, entries[next++]);
      ++written;
      continue;
    }
    const std::size_t at = out.size();
    out.append(old.substr(e->begin, e->end - e->begin));
    ++written;
    // Racily clean: changed no earlier than the old index was written, in whole seconds. git
    // compares seconds only unless it was built with USE_NSEC (Debian's is not): a file changed
    // later in the same second as the index, with the same size, has the entry's stat data.
    const std::uint32_t mode = be32(old, e->begin + 24), size = be32(old, e->begin + 36);
    const bool racy = be32(old, e->begin + 8) >= old_mtime.s;
    if (racy && size != 0 && (mode & kTypeMask) != kGitlink && e->stage() == 0 &&
        !still_clean(e->path, mode, reinterpret_cast<const std::uint8_t*>(old.data() + e->begin + kStatBytes)))
      std::memset(out.data() + at + 36, 0, 4);
  }
  for (; next < entries.size(); ++next, ++written) append_entry(out, entries[next]);

  // Extensions: the cache tree kept (invalidated where the new entries are), other optional
  // ones dropped (libgit2 does not keep them either), the rest left to libgit2.
  while (pos < body) {
    if (body - pos < 8) return std::nullopt;
    const std::string_view sig = old.substr(pos, 4);
    const std::uint32_t size = be32(old, pos + 4);
    if (body - pos - 8 < size) return std::nullopt;
    const std::string_view data = old.substr(pos + 8, size);
    pos += 8 + size;
    if (sig == "TREE") {
      if (data.empty()) continue;
      CacheTree root;
      std::size_t at = 0;
      if (!parse_cache_tree(data, at, root, 0) || at != data.size()) return std::nullopt;
      for (const auto& n : entries) invalidate(root, n.path);
      std::string tree;
      write_cache_tree(tree, root);
      out.append("TREE");
      put32(out, static_cast<std::uint32_t>(tree.size()));
      out.append(tree);
    } else if (sig[0] < 'A' || sig[0] > 'Z' || sig == "REUC" || sig == "NAME") {
      return std::nullopt;
    }
  }
  if (pos != body) return std::nullopt;

  set_count(out, written);
  const auto trailer = file_checksum(out);
  out.append(reinterpret_cast<const char*>(trailer.data()), trailer.size());
  return out;
}

}  // namespace abtrack::gitstore
