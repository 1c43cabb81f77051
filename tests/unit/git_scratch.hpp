#pragma once
// A scratch git repository for unit tests: made by the real git CLI with a committer identity,
// removed (with everything in it) when the test is done.
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include <doctest/doctest.h>
#include <fmt/format.h>

struct GitScratch {
  std::filesystem::path dir;
  std::string quoted;  // the path in single quotes, for commands
  explicit GitScratch(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() / fmt::format("abtrack-unit-{}-{}", tag, std::random_device{}())),
        quoted("'" + dir.string() + "'") {
    std::filesystem::create_directories(dir);
    REQUIRE(std::system(("git init -q " + quoted + " && git -C " + quoted + " config user.name t && git -C " + quoted +
                         " config user.email t@example.com")
                            .c_str()) == 0);
  }
  ~GitScratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  GitScratch(const GitScratch&) = delete;
  GitScratch& operator=(const GitScratch&) = delete;
  // Runs `git -C <dir> ARGS`; true when it exits 0.
  bool git(const std::string& args) const { return std::system(("git -C " + quoted + " " + args).c_str()) == 0; }
};
