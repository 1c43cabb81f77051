#include <doctest/doctest.h>

#include "util/files.hpp"
#include "util/text.hpp"

using namespace abtrack;

TEST_CASE("shell_quote makes one literal word") {
  CHECK(util::shell_quote("plain") == "'plain'");
  CHECK(util::shell_quote("") == "''");
  CHECK(util::shell_quote("a b;c") == "'a b;c'");
  CHECK(util::shell_quote("it's") == "'it'\\''s'");
  CHECK(util::shell_quote("`id` $(id)") == "'`id` $(id)'");
}

TEST_CASE("did_you_mean finds near names only") {
  CHECK(util::did_you_mean("comand", {"command", "metrics"}) == "command");
  CHECK(util::did_you_mean("warp", {"warps", "stages"}) == "warps");
  CHECK_FALSE(util::did_you_mean("zzzzzz", {"command", "metrics"}));
}

TEST_CASE("utf8_tail keeps valid text and replaces garbage") {
  CHECK(util::utf8_tail("hello", 3) == "llo");
  CHECK(util::utf8_tail("h\xC3\xA9llo", 5) == "\xC3\xA9llo");
  CHECK(util::utf8_tail("a\xFF"
                        "b",
                        10) ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(util::utf8_tail("a\x01"
                        "b",
                        10) ==
        "a\xEF\xBF\xBD"
        "b");
}

TEST_CASE("parse_double takes whole numbers only") {
  CHECK(util::parse_double(" 6.7e-3 ") == doctest::Approx(6.7e-3));
  CHECK_FALSE(util::parse_double("6.7x"));
  CHECK_FALSE(util::parse_double(""));
}

TEST_CASE("sha256 matches the known digest") {
  CHECK(util::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("is_atomic_temp knows write_file_atomic's temp names and nothing else") {
  CHECK(util::is_atomic_temp(".AB.md.abtrack-5eed.tmp"));
  CHECK(util::is_atomic_temp("docs/.ab.md.abtrack-0123456789abcdef.tmp"));
  CHECK_FALSE(util::is_atomic_temp("AB.md"));
  CHECK_FALSE(util::is_atomic_temp(".abtrack-5eed.tmp"));        // no file name before the tag
  CHECK_FALSE(util::is_atomic_temp(".AB.md.abtrack-.tmp"));      // no number
  CHECK_FALSE(util::is_atomic_temp(".AB.md.abtrack-5EED.tmp"));  // written in lowercase hex
  CHECK_FALSE(util::is_atomic_temp("AB.md.abtrack-5eed.tmp"));   // not hidden
  CHECK_FALSE(util::is_atomic_temp(".AB.md.abtrack-5eed.tmpx"));
}
