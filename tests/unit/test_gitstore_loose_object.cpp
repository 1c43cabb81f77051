#include <doctest/doctest.h>

#include <sys/stat.h>
#include <zlib.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "git_scratch.hpp"
#include "gitstore/loose_object.hpp"
#include "util/files.hpp"

using namespace abtrack;
using namespace abtrack::gitstore;
namespace fs = std::filesystem;

namespace {

std::string inflate_all(const std::string& in) {
  z_stream s{};
  REQUIRE(inflateInit(&s) == Z_OK);
  std::string out(1 << 20, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uInt>(in.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&s, Z_FINISH) == Z_STREAM_END);  // also checks the Adler-32 trailer
  CHECK(s.avail_in == 0);
  out.resize(s.total_out);
  inflateEnd(&s);
  return out;
}

// What `git hash-object -w` names `content`, in a scratch repository.
std::string git_id(const GitScratch& r, const std::string& content) {
  const std::string file = r.dir.string() + ".in", out = r.dir.string() + ".id";
  util::write_file_atomic(file, content, util::Durability::ordinary);
  REQUIRE(r.git(fmt::format("hash-object '{}' >'{}'", file, out)));
  std::string id = util::read_file(out);
  fs::remove(file);
  fs::remove(out);
  return id.substr(0, 40);
}

}  // namespace

TEST_CASE("stored loose object: a zlib stream of stored blocks that inflates to the object") {
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{65524}, std::size_t{65535}, std::size_t{200000}}) {
    std::string data(size, '\0');
    for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
    const std::string bytes = stored_loose_object("blob", data);
    CHECK(inflate_all(bytes) == fmt::format("blob {}", size) + std::string(1, '\0') + data);
    // Header, one 5-byte head per stored block, Adler-32: no compression, so nothing larger.
    const std::size_t object = fmt::format("blob {}", size).size() + 1 + size;
    CHECK(bytes.size() == 2 + 5 * ((object + 65534) / 65535) + object + 4);
  }
}

TEST_CASE("stored loose object: git reads it, fsck accepts it, an existing object is left alone") {
  GitScratch r("loose");
  const fs::path objects = r.dir / ".git/objects";
  std::string content;
  for (int i = 0; i < 5000; ++i) content += fmt::format("line {} of a blob larger than one stored block\n", i);
  const std::string id = git_id(r, content);
  write_stored_loose_object(objects, id, "blob", content);
  const fs::path file = objects / id.substr(0, 2) / id.substr(2);
  REQUIRE(fs::exists(file));
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0444);  // read-only, as git writes objects
  const std::string out = r.dir.string() + ".out";
  REQUIRE(r.git(fmt::format("cat-file -p {} >'{}'", id, out)));
  CHECK(util::read_file(out) == content);
  fs::remove(out);
  CHECK(r.git("fsck --strict 2>/dev/null"));
  // Written again: the file stays as it was, and no temporary file is left behind.
  const auto before = fs::last_write_time(file);
  write_stored_loose_object(objects, id, "blob", content);
  CHECK(fs::last_write_time(file) == before);
  for (const auto& e : fs::directory_iterator(objects / id.substr(0, 2))) CHECK(e.path().filename().string().find("tmp") == std::string::npos);
}
