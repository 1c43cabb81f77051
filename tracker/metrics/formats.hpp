#pragma once
// Samples from the JSON that benchmark tools write: hyperfine, Google Benchmark, nvbench.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "metrics/extract.hpp"

namespace abtrack::metrics {

// The JSON document in `text`: the whole text when it is one JSON value, otherwise the last
// JSON object in it (a tool that logs before its JSON). Returns nullopt and sets `why` when
// there is none.
std::optional<nlohmann::json> json_document(std::string_view text, std::string* why = nullptr);

// hyperfine --export-json: `field` (mean, median, min, max, stddev: one sample per result;
// times: one sample per timed run) of the results whose `command` matches `name_regex`
// (searched; empty: every result). Errors say what is missing and what there is.
Extraction from_hyperfine(const nlohmann::json& doc, std::string_view field, const std::string& name_regex);

// Google Benchmark --benchmark_format=json: `field` (real_time, cpu_time or a user counter, in
// the file's units) of every iteration row (not aggregates) whose name matches `name_regex`
// (searched): one sample per repetition. A matching row that reported an error is an error.
Extraction from_gbench(const nlohmann::json& doc, std::string_view field, const std::string& name_regex);

// nvbench --json: the "value" datum of the summary tagged `tag` (e.g. nv/cold/time/gpu/mean)
// in every state that is not skipped and whose name matches `state_regex` (searched; empty:
// every state of every benchmark): one sample per state. nvbench writes the numbers as strings.
Extraction from_nvbench(const nlohmann::json& doc, std::string_view tag, const std::string& state_regex);

}  // namespace abtrack::metrics
