#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "gitstore/repository.hpp"
#include "util/files.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

#ifdef ABTRACK_STATIC_DEPS
// abtrack's own GSSAPI definitions (gitstore/link_overrides.cpp), in place of libgssapi_krb5.
extern "C" std::uint32_t gss_indicate_mechs(std::uint32_t* minor, void** mechs);
extern "C" std::uint32_t gss_release_oid_set(std::uint32_t* minor, void** mechs);

TEST_CASE("GSSAPI is absent: libgit2's Negotiate authentication would fail cleanly") {
  std::uint32_t minor = 7;
  void* mechs = &minor;
  std::uint32_t major = gss_indicate_mechs(&minor, &mechs);
  CHECK((major & 0xffff0000u) == (13u << 16));  // GSS_S_FAILURE, a routine error
  CHECK(minor == 0);
  CHECK(mechs == nullptr);
  CHECK(gss_release_oid_set(&minor, &mechs) == 0);
}
#endif

TEST_CASE("libgit2 starts without loading CA certificates, and commits") {
  fs::path dir = fs::temp_directory_path() / fmt::format("abtrack-unit-git-{}", std::random_device{}());
  fs::create_directories(dir);
  std::string q = "'" + dir.string() + "'";
  REQUIRE(std::system(("git init -q " + q + " && git -C " + q + " config user.name t && git -C " + q +
                       " config user.email t@example.com").c_str()) == 0);
  {
    auto repo = gitstore::Repository::discover(dir);
#ifdef ABTRACK_STATIC_DEPS
    // Linked statically with the wrappers: libgit2's one request for the CA bundle got nothing.
    CHECK(gitstore::ca_certificate_loads_skipped() == 1);
#else
    CHECK(gitstore::ca_certificate_loads_skipped() == 0);
#endif
    auto done = repo.commit([](const gitstore::TreeView& tip) {
      CHECK_FALSE(tip.commit().has_value());  // an unborn branch
      gitstore::Change c;
      c.message = "first\n";
      c.files = {{"runs/x/0001.json", "{}\n"}};
      return c;
    });
    CHECK(done.commit.size() == 40);
    CHECK(repo.head() == done.commit);
    CHECK(repo.with_head([](const gitstore::TreeView& t) { return t.read("runs/x/0001.json"); }) == std::string("{}\n"));
    CHECK(util::read_file(dir / "runs/x/0001.json") == "{}\n");
    CHECK(repo.status({"runs/"}).empty());
  }
  fs::remove_all(dir);
}
