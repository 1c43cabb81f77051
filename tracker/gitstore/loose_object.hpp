#pragma once
// A loose object (objects/ab/cdef...) written with its content stored, not compressed. A step's
// largest object is the tree of runs/<experiment>/ (37 KB at 1000 runs, 370 KB at 10,000): its
// entries' binary ids hardly compress (37,000 -> 24,500 bytes), and zlib's level 1 took ~0.35 ms
// of a step for them. Stored deflate blocks are a valid zlib stream:
// git and libgit2 read the object like any other (as with git's core.looseCompression=0), and
// git gc compresses it when it packs.
#include <filesystem>
#include <string>
#include <string_view>

namespace abtrack::gitstore {

// The bytes of a loose object file: zlib's stream (stored blocks) of "<type> <size>\0<data>".
std::string stored_loose_object(std::string_view type, std::string_view data);

// Writes that file for the object whose id is `hex` (40 hex digits, computed by the caller) under
// `objects_dir`, through a temporary file linked into place (never a partly written object); an
// object already there is left as it is (the caller asks git_odb_exists first, which also sees
// packs; a link that finds the file keeps it). Throws util::Error when the file cannot be written.
void write_stored_loose_object(const std::filesystem::path& objects_dir, const std::string& hex, std::string_view type,
                               std::string_view data);

}  // namespace abtrack::gitstore
