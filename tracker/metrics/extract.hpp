#pragma once
// Reading named samples from what a command printed.
#include <filesystem>
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

// Reads one metric from `text` (the command's stdout or the text of the metric's file) in the
// metric's format and multiplies the samples by its scale. Errors do not name the metric.
Extraction extract(const plan::Metric& metric, std::string_view text);

// Where metrics with `file:` are read after an invocation: relative to `dir` (the command's
// working directory), with the {axis} placeholders of the path replaced by the cell's values
// (not quoted).
struct MetricFiles {
  std::filesystem::path dir;
  const plan::Plan* plan = nullptr;
  const plan::Cell* cell = nullptr;

  // The path of `metric`'s file as the plan writes it after substitution ("out/8.json").
  std::string relative(const plan::Metric& metric) const;
  // That path, resolved against `dir`.
  std::filesystem::path resolve(const plan::Metric& metric) const;
};

// What a metric file looked like before an invocation (absent: it did not exist), so that a file
// left over from an earlier run is not read as this one's result.
struct FileStamp {
  std::filesystem::file_time_type modified;
  std::uintmax_t size = 0;
  bool operator==(const FileStamp&) const = default;
};
using FileStamps = std::map<std::filesystem::path, std::optional<FileStamp>>;

// The stamps of every metric file of `metrics` (call it just before the invocation). Never throws.
FileStamps stamp_files(const std::vector<plan::Metric>& metrics, const MetricFiles& files);

// Extracts every metric of the plan from `text` (stdout; its JSON document is found once) or,
// for metrics with `file:`, from that file (each file read and parsed once). A missing file, or
// one that still has the size and time it had in `before`, is an error naming the path. Without
// `files`, a metric with `file:` is an error. Errors name the metric:
// "metric 'time_us': json path 'samples_us' not found".
std::map<std::string, Extraction> extract_all(const std::vector<plan::Metric>& metrics, std::string_view text,
                                              const MetricFiles* files = nullptr, const FileStamps* before = nullptr);

}  // namespace abtrack::metrics
