#include <doctest/doctest.h>

#include <string>

#include "util/expected.hpp"
#include "util/files.hpp"
#include "util/regex.hpp"

using namespace abtrack;

TEST_CASE("Expected holds a value or the failure in its place") {
  Expected<std::string> good = std::string("text");
  REQUIRE(good.ok());
  CHECK(static_cast<bool>(good));
  CHECK(good.value() == "text");
  CHECK_THROWS_AS((void)good.error(), std::bad_variant_access);

  Expected<std::string> bad = Failure("cannot read x: No such file or directory");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == "cannot read x: No such file or directory");
  CHECK(bad.code() == Exit::environment);
  CHECK_THROWS_AS((void)bad.value(), std::bad_variant_access);
  CHECK(Expected<std::string>(Failure("no")).value_or("fallback") == "fallback");
  CHECK(Expected<std::string>(std::string("yes")).value_or("fallback") == "yes");

  Expected<int> passed_on = bad.failure();
  CHECK(passed_on.error() == bad.error());
}

TEST_CASE("value_or_throw throws the failure as an Error with its exit code") {
  CHECK(Expected<int>(7).value_or_throw() == 7);
  try {
    (void)Expected<int>(Failure("bad pattern", Exit::usage)).value_or_throw();
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK(e.code() == Exit::usage);
    CHECK(std::string(e.what()) == "bad pattern");
    CHECK(e.diagnostics().front().hint.empty());
  }
  Expected<> done;
  CHECK(done.ok());
  Expected<> failed = Failure("cannot write y");
  CHECK_THROWS_AS(std::move(failed).value_or_throw(), Error);
}

TEST_CASE("try_read_file says why a file cannot be read; read_file throws the same words") {
  auto missing = util::try_read_file("/nonexistent/abtrack-expected-test");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() == "cannot read /nonexistent/abtrack-expected-test: No such file or directory");
  try {
    util::read_file("/nonexistent/abtrack-expected-test");
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == missing.error());
    CHECK(e.code() == Exit::environment);
  }
  auto unwritable = util::try_write_file_atomic("/proc/abtrack-expected-test", "x");
  REQUIRE_FALSE(unwritable.ok());
  CHECK(unwritable.error().starts_with("cannot write /proc/"));
}

TEST_CASE("compile_regex returns the regex, or std::regex's reason as a usage failure") {
  auto re = util::compile_regex("time: ([0-9.]+)");
  REQUIRE(re.ok());
  CHECK(re.value().mark_count() == 1);
  auto bad = util::compile_regex("time: ([0-9.]+");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.code() == Exit::usage);
  CHECK_FALSE(bad.error().empty());
}
