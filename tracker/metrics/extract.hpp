#pragma once
// Reading named samples from what a command printed.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan.hpp"

namespace abtrack::metrics {

// The samples of one metric, or why there are none ("no JSON object on stdout", ...).
struct Extraction {
  std::vector<double> samples;
  std::string error;  // empty when samples were read; otherwise the run is invalid
  bool ok() const { return error.empty(); }
};

// The last top-level JSON object printed in `text` (one line or pretty-printed over several
// lines starting with '{' at a line start). Returns nullopt and sets `why` when there is none.
std::optional<nlohmann::json> last_json_object(std::string_view text, std::string* why = nullptr);

// Looks up a dotted path ("a.b.0.c": keys, and indices into arrays) and turns a number or an
// array of numbers into samples. NaN/Inf, strings, empty arrays are errors naming the path.
Extraction from_json(const nlohmann::json& object, std::string_view path);

// Every match of group 1 of `pattern`, matched line by line, parsed as a number.
Extraction from_regex(std::string_view text, const std::string& pattern);

// Extracts every metric of the plan from `text` (the JSON object is found once). Errors
// name the metric: "metric 'time_us': json path 'samples_us' not found".
std::map<std::string, Extraction> extract_all(const std::vector<plan::Metric>& metrics, std::string_view text);

}  // namespace abtrack::metrics
