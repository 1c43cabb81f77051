#include <doctest/doctest.h>

#include "record/record.hpp"

using namespace abtrack;

TEST_CASE("record paths and run numbers") {
  CHECK(record::record_path("occ", 7) == "runs/occ/0007.json");
  CHECK(record::record_path("occ", 12345) == "runs/occ/12345.json");
  CHECK(record::run_number_of("0007.json") == 7);
  CHECK(record::run_number_of("12345.json") == 12345);
  CHECK_FALSE(record::run_number_of("7.json"));
  CHECK_FALSE(record::run_number_of("0007.txt"));
  CHECK_FALSE(record::run_number_of("00007.json"));
  CHECK_FALSE(record::run_number_of("0000.json"));
}

TEST_CASE("a record survives a round trip through JSON") {
  record::Record r;
  r.experiment = "occ";
  r.run = 3;
  r.cell = {{"warps", "8"}, {"name", "a|b"}, {"lead", "007"}};
  r.data.command = "bench --warps '8'";
  r.data.outcome = runner::Outcome::fail;
  r.data.reason = "gate 'x' does not hold";
  r.data.samples["t"] = {1.5, 2.5, 3.25};
  runner::Invocation inv;
  inv.exit_code = 0;
  inv.stdout_tail = "out\n";
  r.data.invocations.push_back(inv);
  r.code.commit = std::string(40, 'b');
  r.code.dirty = true;
  r.code.snapshot = std::string(40, 'c');
  auto text = record::to_json(r);
  CHECK(text.find("\"warps\": 8") != std::string::npos);       // integers are numbers
  CHECK(text.find("\"lead\": \"007\"") != std::string::npos);  // but not when that would change the text
  auto back = record::parse_record(text, "runs/occ/0003.json");
  CHECK(back.run == 3);
  CHECK(back.cell == r.cell);
  CHECK(back.label() == "warps=8 name=a|b lead=007");
  CHECK(back.data.outcome == runner::Outcome::fail);
  CHECK(back.data.samples["t"] == r.data.samples["t"]);
  CHECK(back.code.snapshot == r.code.snapshot);
  CHECK(back.code.trailer() == std::string(40, 'b') + " +snapshot " + std::string(40, 'c'));
  CHECK(back.data.invocations.at(0).exit_code == 0);
}

TEST_CASE("a malformed record names its file") {
  CHECK_THROWS_WITH_AS(record::parse_record("{\"schema\": 1}", "runs/occ/0001.json"),
                       doctest::Contains("runs/occ/0001.json: malformed run record"), Error);
  CHECK_THROWS_WITH_AS(record::parse_record("not json", "runs/occ/0002.json"),
                       doctest::Contains("runs/occ/0002.json: malformed run record: not a JSON object"), Error);
}

TEST_CASE("the document a record names, read without parsing the record") {
  record::Record r;
  r.experiment = "occ";
  r.run = 3;
  r.doc = "docs/OCC.md";
  CHECK(record::document_named(record::to_json(r)) == "docs/OCC.md");
  CHECK_FALSE(record::document_named("{\"schema\": 1, \"run\": 1}"));  // written before records named it
  CHECK_FALSE(record::document_named("{\"doc\": 7}"));
  CHECK_FALSE(record::document_named("not json"));
}

TEST_CASE("warm-up samples are kept apart from the samples, and read back") {
  record::Record r;
  r.experiment = "occ";
  r.run = 1;
  r.data.outcome = runner::Outcome::pass;
  r.data.samples["t"] = {10, 11, 12};
  r.data.samples["err"] = {0};
  r.data.warmup.ensure()["t"] = {100, 90};
  plan::Metric t;
  t.name = "t";
  t.warmup = 2;
  plan::Metric err;
  err.name = "err";
  r.metric_specs = {t, err};
  auto text = record::to_json(r);
  CHECK(text.find("\"warmup\": 2") != std::string::npos);
  CHECK(text.find("\"n\": 3") != std::string::npos);  // the summary counts the kept samples
  CHECK(text.find("\"median\": 11.0") != std::string::npos);
  auto back = record::parse_record(text, "runs/occ/0001.json");
  CHECK(back.data.samples["t"] == r.data.samples["t"]);
  CHECK(back.data.warmup.or_empty().at("t") == r.data.warmup.or_empty().at("t"));
  CHECK(back.data.warmup.or_empty().count("err") == 0);  // a metric without warm-up has no warmup_samples
}
