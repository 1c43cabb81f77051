#pragma once
// Reading what Nsight Compute printed: `ncu --csv` rows, its errors and warnings. Pure: running
// ncu is runner/profile.hpp's.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abtrack::metrics {

// One row of `ncu --csv`: one metric of one profiled kernel launch.
struct NcuRow {
  std::string kernel;  // "Kernel Name", as ncu names it: "tidy(const float *, float *, int)"
  std::string metric;  // "Metric Name"
  std::string unit;    // "Metric Unit": "%", "byte", "register/thread", "" for a metric ncu does not know
  std::string value;   // "Metric Value" as printed: "1,024", "16.43", "n/a"
};

// What one ncu invocation printed, read.
struct NcuOutput {
  std::vector<NcuRow> rows;
  std::vector<std::string> errors;             // each "==ERROR== " line, without that prefix
  bool no_permission = false;                  // ERR_NVGPUCTRPERM: no access to the counters
  bool no_kernels = false;                     // "No kernels were profiled."
  std::vector<std::string> available_kernels;  // the list ncu prints after that
};

// Reads `text` (ncu's stdout and stderr, interleaved with the profiled command's own output):
// the CSV rows under each `"ID","Process ID",...` header line (columns found by name), the
// `==ERROR==` lines and the no-kernel warning. Never throws.
NcuOutput parse_ncu(std::string_view text);

// A value as ncu prints it, thousands separators and all ("5,485,568" -> 5485568); nullopt for
// "n/a" or anything else that is not a finite number.
std::optional<double> ncu_number(std::string_view value);

// The fields of one CSV line ("a","b,c","d""e" -> a | b,c | d"e); nullopt when it is not a
// line of quoted fields.
std::optional<std::vector<std::string>> csv_fields(std::string_view line);

}  // namespace abtrack::metrics
