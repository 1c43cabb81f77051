#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>

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

TEST_CASE("shared locks coexist; an exclusive one waits for them all, and try_lock never waits") {
  auto file = scratch("shared.lock");
  auto a = util::FileLock::try_lock(file, util::LockMode::shared);
  auto b = util::FileLock::try_lock(file, util::LockMode::shared);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(util::FileLock::try_lock(file, util::LockMode::exclusive));
  a.reset();
  CHECK_FALSE(util::FileLock::try_lock(file, util::LockMode::exclusive));
  b.reset();
  auto ex = util::FileLock::try_lock(file, util::LockMode::exclusive);
  REQUIRE(ex);
  CHECK_FALSE(util::FileLock::try_lock(file, util::LockMode::shared));
  ex.reset();
  std::filesystem::remove_all(file.parent_path());
}

TEST_CASE("a lock file removed by its holder is not locked by the next holder: the file there is") {
  auto file = scratch("removed.lock");
  auto first = util::FileLock::try_lock(file);
  REQUIRE(first);
  // Another process waiting on the old file gets it once the holder is done; it must then lock
  // the file that is there now, or two holders would both think they hold the lock.
  std::optional<util::FileLock> waiter;
  std::thread t([&] { waiter.emplace(file, std::chrono::seconds(5)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::filesystem::remove(file);
  first.reset();
  t.join();
  REQUIRE(waiter);
  CHECK(std::filesystem::exists(file));
  CHECK_FALSE(util::FileLock::try_lock(file));  // the waiter holds the file that exists
  waiter.reset();
  std::filesystem::remove_all(file.parent_path());
}
