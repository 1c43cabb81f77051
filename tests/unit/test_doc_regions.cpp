#include <doctest/doctest.h>

#include "doc/regions.hpp"
#include "util/error.hpp"

using namespace abtrack;

TEST_CASE("splice rewrites only the regions, keeping prose byte for byte") {
  std::string text =
      "# Title\r\nprose  with trailing spaces  \n<!-- abtrack:begin results -->\nold\n<!-- abtrack:end results -->\n\ttail\n";
  auto out = doc::splice(text, "AB.md", {{"results", "new 1\nnew 2\n"}});
  CHECK(
      out ==
      "# Title\r\nprose  with trailing spaces  \n<!-- abtrack:begin results -->\nnew 1\nnew 2\n<!-- abtrack:end results -->\n\ttail\n");
  CHECK(doc::splice(out, "AB.md", {{"results", "new 1\nnew 2\n"}}) == out);
}

TEST_CASE("regions may be anywhere, in any order, and unnamed ones keep their content") {
  std::string text =
      "<!-- abtrack:begin runs -->\nR\n<!-- abtrack:end runs -->\nmid\n  <!--abtrack:begin summary-->\nS\n<!-- abtrack:end summary -->";
  auto regions = doc::find_regions(text, "AB.md");
  REQUIRE(regions.size() == 2);
  CHECK(regions[0].name == "runs");
  CHECK(regions[1].name == "summary");
  auto out = doc::splice(text, "AB.md", {{"summary", "new\n"}});
  CHECK(
      out ==
      "<!-- abtrack:begin runs -->\nR\n<!-- abtrack:end runs -->\nmid\n  <!--abtrack:begin summary-->\nnew\n<!-- abtrack:end summary -->");
}

TEST_CASE("malformed regions are reported with their line") {
  CHECK_THROWS_WITH_AS(
      doc::find_regions("a\n<!-- abtrack:begin results -->\nx\n", "AB.md"),
      "AB.md:2:1: region 'results' has no end marker\n  hint: add <!-- abtrack:end results --> on a line of its own",
      Error);
  CHECK_THROWS_WITH_AS(
      doc::find_regions("<!-- abtrack:end runs -->\n", "AB.md"),
      "AB.md:1:1: end of region 'runs' without its begin marker\n  hint: regions look like <!-- abtrack:begin runs --> ... <!-- abtrack:end runs -->",
      Error);
  CHECK_THROWS_WITH_AS(
      doc::find_regions("<!-- abtrack:begin result -->\n", "AB.md"),
      "AB.md:1:1: unknown abtrack region 'result', did you mean 'results'?\n  hint: the regions are summary, results and runs",
      Error);
  CHECK_THROWS_AS(doc::find_regions("<!-- abtrack:begin runs -->\n<!-- abtrack:begin results -->\n", "AB.md"), Error);
  CHECK_THROWS_AS(
      doc::find_regions(
          "<!-- abtrack:begin runs -->\n<!-- abtrack:end runs -->\n<!-- abtrack:begin runs -->\n<!-- abtrack:end runs -->\n",
          "AB.md"),
      Error);
}

TEST_CASE("a marker must be a line of its own") {
  CHECK(doc::find_regions("text <!-- abtrack:begin results --> more\n", "AB.md").empty());
  CHECK(doc::find_regions("`<!-- abtrack:begin results -->`\n", "AB.md").empty());
}
