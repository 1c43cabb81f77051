#include <doctest/doctest.h>

#include <string>

#include "metrics/ncu.hpp"
#include "util/files.hpp"

using namespace abtrack;

namespace {

std::string recorded(const char* name) {
  return util::read_file(std::string(ABTRACK_SOURCE_DIR) + "/tests/data/cuda/recorded/" + name);
}

}  // namespace

TEST_CASE("ncu: the CSV a real ncu printed, between its own lines and the program's") {
  auto out = metrics::parse_ncu(recorded("ncu-occupancy.txt"));
  CHECK(out.errors.empty());
  CHECK_FALSE(out.no_permission);
  CHECK_FALSE(out.no_kernels);
  REQUIRE(out.rows.size() == 23);
  CHECK(out.rows[0].kernel == "tidy(const float *, float *, int)");
  CHECK(out.rows[0].metric == "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  CHECK(out.rows[0].unit == "%");
  CHECK(out.rows[0].value == "16.43");
  bool smem = false;
  for (const auto& r : out.rows)
    if (r.metric == "launch__shared_mem_per_block_static") {
      smem = true;
      CHECK(r.value == "1,024");
      CHECK(metrics::ncu_number(r.value) == 1024.0);
    }
  CHECK(smem);
}

TEST_CASE("ncu: numbers with thousands separators; n/a is no number") {
  CHECK(metrics::ncu_number("5,485,568") == 5485568.0);
  CHECK(metrics::ncu_number(" 16.43 ") == 16.43);
  CHECK(metrics::ncu_number("0") == 0.0);
  CHECK_FALSE(metrics::ncu_number("n/a").has_value());
  CHECK_FALSE(metrics::ncu_number("").has_value());
  CHECK_FALSE(metrics::ncu_number("inf").has_value());
}

TEST_CASE("ncu: an unknown metric has an empty unit and n/a") {
  auto out = metrics::parse_ncu(recorded("ncu-badmetric.txt"));
  REQUIRE(out.rows.size() == 2);
  CHECK(out.rows[1].metric == "no_such__metric.sum");
  CHECK(out.rows[1].unit.empty());
  CHECK(out.rows[1].value == "n/a");
}

TEST_CASE("ncu: no kernel profiled, with the kernels the program launched") {
  auto out = metrics::parse_ncu(recorded("ncu-nokernel.txt"));
  CHECK(out.rows.empty());
  CHECK(out.no_kernels);
  CHECK(out.available_kernels == std::vector<std::string>{"crowded", "staged", "tensor", "tidy"});
}

TEST_CASE("ncu: errors and the counters' permission") {
  auto out = metrics::parse_ncu(
      "==PROF== Connected to process 7 (/bin/sh)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the "
      "target device 0.\r\n"
      "==ERROR== The application returned an error code (1).\n");
  CHECK(out.no_permission);
  REQUIRE(out.errors.size() == 2);
  CHECK(out.errors[1] == "The application returned an error code (1).");
}

TEST_CASE("ncu: CSV fields with commas and doubled quotes; lines that are not rows") {
  auto f = metrics::csv_fields(R"("a","b, c","say ""hi""")");
  REQUIRE(f);
  CHECK(*f == std::vector<std::string>{"a", "b, c", "say \"hi\""});
  CHECK_FALSE(metrics::csv_fields(R"("a",b)"));
  CHECK_FALSE(metrics::csv_fields(R"("a)"));
  // A row before any header, or of another width, is the program's output.
  auto out = metrics::parse_ncu(
      "\"0\",\"1\"\n\"ID\",\"Process ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"1\",\"k\",\"m\",\"u\",\"2\"\n\"x\",\"y\"\n");
  REQUIRE(out.rows.size() == 1);
  CHECK(out.rows[0].kernel == "k");
  CHECK(out.rows[0].value == "2");
}
