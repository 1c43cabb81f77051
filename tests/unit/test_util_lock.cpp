#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "util/error.hpp"
#include "util/lock.hpp"

using namespace abtrack;

namespace {
std::filesystem::path scratch(const char* name) {
  auto dir = std::filesystem::temp_directory_path() / ("abtrack-lock-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.diagnostics().front().message;
  }
  return "";
}
}  // namespace

TEST_CASE("a held lock makes a bounded wait fail with the file named, and is free once released") {
  auto file = scratch("held.lock");
  std::optional<util::FileLock> first;
  first.emplace(file);
  auto t0 = std::chrono::steady_clock::now();
  std::string msg = message_of([&] { util::FileLock second(file, std::chrono::seconds(1)); });
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(msg.find("another abtrack has held") != std::string::npos);
  CHECK(msg.find(file.string()) != std::string::npos);
  CHECK(waited >= 0.9);
  first.reset();
  CHECK(message_of([&] { util::FileLock again(file, std::chrono::seconds(1)); }).empty());
  CHECK(message_of([&] { util::FileLock unbounded(file); }).empty());
  std::filesystem::remove_all(file.parent_path());
}

TEST_CASE("a lock file that cannot be created is an error, not a missing lock") {
  auto msg = message_of([] { util::FileLock l("/nonexistent-dir-abtrack/x.lock"); });
  CHECK(msg.find("cannot open /nonexistent-dir-abtrack/x.lock") != std::string::npos);
}
