#include <doctest/doctest.h>

#include "metrics/extract.hpp"

using namespace abtrack;

namespace {
plan::Metric json_metric(const std::string& name, const std::string& path) {
  plan::Metric m;
  m.name = name;
  m.selector = path;
  m.source = plan::Source::json;
  return m;
}
}  // namespace

TEST_CASE("the last JSON object on stdout wins") {
  std::string out = "warming up\n{\"median_us\": 1}\nlog line\n{\"median_us\": 2, \"samples_us\": [3, 4.5]}\n";
  auto j = metrics::last_json_object(out);
  REQUIRE(j);
  CHECK((*j)["median_us"] == 2);
}

TEST_CASE("a pretty-printed object is found whole, not its nested objects") {
  std::string out = "{\"a\": 1}\n{\n  \"rows\": [\n    {\"x\": 1}\n  ],\n  \"t\": 7\n}\ntrailing text\n";
  auto j = metrics::last_json_object(out);
  REQUIRE(j);
  CHECK((*j)["t"] == 7);
}

TEST_CASE("no JSON, broken JSON, NaN") {
  std::string why;
  CHECK_FALSE(metrics::last_json_object("nothing here\n", &why));
  CHECK(why == "no JSON object on stdout");
  CHECK_FALSE(metrics::last_json_object("INFO: {\"t\": 3}\n", &why));
  CHECK(
      why ==
      "no JSON object starts a line (a '{' after other text on its line is not read: print the object on a line of its own)");
  CHECK_FALSE(metrics::last_json_object("{\"g\": , \"t\": 1}\n", &why));
  CHECK(why == "the last JSON-looking output does not parse: {\"g\": , \"t\": 1}");
  CHECK_FALSE(metrics::last_json_object("{\"t\": NaN}\n", &why));
  CHECK(why.find("does not parse (NaN and Infinity are not JSON)") != std::string::npos);
  CHECK_FALSE(metrics::last_json_object("{\"t\": [1, 2\n", &why));
  CHECK(why == "the last JSON-looking output is not a complete object");
}

TEST_CASE("dotted paths, arrays and bad values") {
  auto j = nlohmann::json::parse(R"({"a": {"b": [1, 2.5]}, "s": "x", "n": null, "e": [], "rows": [{"t": 9}]})");
  CHECK(metrics::from_json(j, "a.b").samples == std::vector<double>{1, 2.5});
  CHECK(metrics::from_json(j, "rows.0.t").samples == std::vector<double>{9});
  CHECK(metrics::from_json(j, "a.c").error == "json path 'a.c' not found (no key 'c')");
  CHECK(metrics::from_json(j, "s").error == "json path 's' is a string, not a number or an array of numbers");
  CHECK(metrics::from_json(j, "n").error == "json path 'n' is null");
  CHECK(metrics::from_json(j, "e").error == "json path 'e' is an empty array");
  CHECK(metrics::from_json(j, "rows.5").error == "json path 'rows.5' not found (no index '5')");
}

TEST_CASE("regex takes every match of group 1") {
  auto e =
      metrics::from_regex("throughput: 10.5\nthroughput: 11\nother\nthroughput: 1e3\n", "throughput: ([0-9.eE+-]+)");
  CHECK(e.ok());
  CHECK(e.samples == std::vector<double>{10.5, 11, 1000});
  CHECK(metrics::from_regex("none\n", "t: ([0-9]+)").error == "regex 't: ([0-9]+)' matched nothing");
  CHECK(metrics::from_regex("t: nan\n", "t: ([a-z]+)").error == "regex matched 'nan', which is not finite");
  CHECK(metrics::from_regex("t: abc\n", "t: ([a-z]+)").error == "regex matched 'abc', which is not a number");
}

TEST_CASE("extract_all names the metric in errors") {
  std::vector<plan::Metric> ms{json_metric("time_us", "samples_us"), json_metric("rel_err", "rel_err")};
  auto r = metrics::extract_all(ms, "{\"samples_us\": [1, 2]}\n");
  CHECK(r["time_us"].ok());
  CHECK(r["rel_err"].error == "metric 'rel_err': json path 'rel_err' not found (no key 'rel_err')");
  auto none = metrics::extract_all(ms, "no json\n");
  CHECK(none["time_us"].error == "metric 'time_us': no JSON object on stdout");
}
