#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "gitstore/repository.hpp"
#include "util/files.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

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
