#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "record/record.hpp"
#include "util/heap_optional.hpp"

using namespace abtrack;

TEST_CASE("HeapOptional is used like std::optional and copied deeply") {
  util::HeapOptional<std::string> a;
  CHECK_FALSE(a);
  CHECK_FALSE(a.has_value());
  a = std::string("value");
  REQUIRE(a);
  CHECK(*a == "value");
  CHECK(a->size() == 5);
  util::HeapOptional<std::string> b = a;  // a deep copy: changing one leaves the other
  *b += "!";
  CHECK(*a == "value");
  CHECK(*b == "value!");
  b = a;
  CHECK(*b == "value");
  util::HeapOptional<std::string> c = std::move(b);
  CHECK(*c == "value");
  c.reset();
  CHECK_FALSE(c);
  c = std::nullopt;
  CHECK_FALSE(c);
  util::HeapOptional<std::string> empty;
  a = empty;
  CHECK_FALSE(a);
}

TEST_CASE("a record's rarely filled parts cost a pointer each, so a thousand records stay small") {
  // A step at 1000 runs holds a record per run, and every page of them is faulted in.
  CHECK(sizeof(util::HeapOptional<record::Comparison>) == sizeof(void*));
  CHECK(sizeof(util::HeapOptional<runner::Invocation>) == sizeof(void*));
  CHECK(sizeof(record::Record) < 1000);
  record::Record r;
  r.comparison = record::Comparison{3, "v=a", {}, {"note"}};
  record::Record copy = r;
  copy.comparison->notes.clear();
  CHECK(r.comparison->notes.size() == 1);
  CHECK(copy.comparison->baseline_run == 3);
}
