#include "metrics/formats.hpp"

#include <cmath>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/regex.hpp"
#include "util/text.hpp"

namespace abtrack::metrics {
namespace {

// Lists at most a few names in error messages so a big file does not flood the run's reason.
std::string some(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 5;
  if (names.empty()) return "none";
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) shown.push_back("'" + names[i] + "'");
  std::string out = fmt::format("{}", fmt::join(shown, ", "));
  if (names.size() > kShown) out += fmt::format(" and {} more", names.size() - kShown);
  return out;
}

std::optional<std::regex> compile(const std::string& pattern, std::string* why) {
  if (pattern.empty()) return std::nullopt;
  auto re = util::compile_regex(pattern);
  if (re) return std::move(re).value();
  *why = fmt::format("regex '{}' does not compile: {}", pattern, re.error());
  return std::nullopt;
}

bool selected(const std::optional<std::regex>& re, const std::string& subject) {
  return !re || std::regex_search(subject, *re);
}

std::string string_or(const nlohmann::json& j, const char* key, std::string fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A sample from a JSON number, or from a number written as a string (nvbench).
std::optional<double> number_of(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return util::parse_double(v.get<std::string>());
  return std::nullopt;
}

const nlohmann::json* list_at(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object()) return nullptr;
  auto it = doc.find(key);
  return it != doc.end() && it->is_array() ? &*it : nullptr;
}

}  // namespace

std::optional<nlohmann::json> json_document(std::string_view text, std::string* why) {
  auto whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded()) return whole;
  return last_json_object(text, why);
}

Extraction from_hyperfine(const nlohmann::json& doc, std::string_view field, const std::string& name_regex) {
  const auto* results = list_at(doc, "results");
  if (!results) return {{}, "no 'results' list (is this hyperfine --export-json output?)"};
  std::string why;
  auto re = compile(name_regex, &why);
  if (!why.empty()) return {{}, why};
  Extraction out;
  std::vector<std::string> commands;
  std::size_t matched = 0;
  for (const auto& r : *results) {
    std::string command = string_or(r, "command", "");
    commands.push_back(command);
    if (!r.is_object() || !selected(re, command)) continue;
    ++matched;
    auto it = r.find(std::string(field));
    if (it == r.end() || it->is_null())
      return {{},
              fmt::format("hyperfine result '{}' has no {}{}", command, field,
                          field == "stddev" ? " (hyperfine gives none for a single run)" : "")};
    if (field == "times") {
      if (!it->is_array() || it->empty()) return {{}, fmt::format("hyperfine result '{}' has no times", command)};
      for (const auto& t : *it) {
        if (!t.is_number())
          return {{},
                  fmt::format("hyperfine result '{}' has a time that is a {}, not a number", command, t.type_name())};
        out.samples.push_back(t.get<double>());
      }
    } else if (it->is_number()) {
      out.samples.push_back(it->get<double>());
    } else {
      return {{}, fmt::format("hyperfine result '{}': {} is a {}, not a number", command, field, it->type_name())};
    }
  }
  if (results->empty()) return {{}, "hyperfine output has no results"};
  if (matched == 0)
    return {{}, fmt::format("no hyperfine result's command matches '{}' (commands: {})", name_regex, some(commands))};
  return out;
}

Extraction from_gbench(const nlohmann::json& doc, std::string_view field, const std::string& name_regex) {
  const auto* rows = list_at(doc, "benchmarks");
  if (!rows) return {{}, "no 'benchmarks' list (is this --benchmark_format=json output of Google Benchmark?)"};
  std::string why;
  auto re = compile(name_regex, &why);
  if (!why.empty()) return {{}, why};
  Extraction out;
  std::vector<std::string> names;
  for (const auto& row : *rows) {
    if (!row.is_object()) continue;
    // Aggregates (mean, median, stddev, cv of the repetitions) would count the same runs twice.
    if (string_or(row, "run_type", row.contains("aggregate_name") ? "aggregate" : "iteration") != "iteration") continue;
    std::string name = string_or(row, "name", "");
    names.push_back(name);
    if (!selected(re, name)) continue;
    if (row.value("error_occurred", false))
      return {
          {},
          fmt::format("benchmark '{}' reported an error: {}", name, string_or(row, "error_message", "(no message)"))};
    auto it = row.find(std::string(field));
    if (it == row.end()) {
      std::vector<std::string> numeric;
      for (const auto& [k, v] : row.items())
        if (v.is_number() && k != "family_index" && k != "per_family_instance_index" && k != "repetitions" &&
            k != "repetition_index" && k != "threads")
          numeric.push_back(k);
      return {{},
              fmt::format("benchmark '{}' has no field '{}'{} (fields: {})", name, field,
                          util::suggestion_suffix(field, numeric), some(numeric))};
    }
    if (!it->is_number())
      return {{}, fmt::format("benchmark '{}': '{}' is a {}, not a number", name, field, it->type_name())};
    out.samples.push_back(it->get<double>());
  }
  if (out.samples.empty())
    return {{}, fmt::format("no benchmark row matches '{}' (iteration rows: {})", name_regex, some(names))};
  return out;
}

Extraction from_nvbench(const nlohmann::json& doc, std::string_view tag, const std::string& state_regex) {
  const auto* benches = list_at(doc, "benchmarks");
  if (!benches) return {{}, "no 'benchmarks' list (is this nvbench --json output?)"};
  std::string why;
  auto re = compile(state_regex, &why);
  if (!why.empty()) return {{}, why};
  Extraction out;
  std::vector<std::string> names;
  std::string skipped;
  for (const auto& bench : *benches) {
    const auto* states = list_at(bench, "states");
    if (!states) continue;
    for (const auto& st : *states) {
      if (!st.is_object()) continue;
      // nvbench's JSON 1.0 names a state in "name"; earlier files called it "description".
      std::string name = string_or(st, "name", string_or(st, "description", ""));
      names.push_back(name);
      if (!selected(re, name)) continue;
      if (st.value("is_skipped", false)) {
        if (skipped.empty())
          skipped = fmt::format("state '{}' was skipped: {}", name, string_or(st, "skip_reason", "(no reason)"));
        continue;
      }
      const auto* summaries = list_at(st, "summaries");
      const nlohmann::json* summary = nullptr;
      std::vector<std::string> tags;
      if (summaries)
        for (const auto& s : *summaries) {
          std::string t = string_or(s, "tag", "");
          tags.push_back(t);
          if (t == tag && !summary) summary = &s;
        }
      if (!summary)
        return {{},
                fmt::format("state '{}' has no summary tagged '{}'{} (tags: {})", name, tag,
                            util::suggestion_suffix(tag, tags), some(tags))};
      std::optional<double> value;
      bool found = false;
      if (const auto* data = list_at(*summary, "data"))
        for (const auto& d : *data)
          if (string_or(d, "name", "") == "value" && d.contains("value")) {
            found = true;
            value = number_of(d["value"]);
            break;
          }
      if (!found) return {{}, fmt::format("state '{}': summary '{}' has no \"value\" datum", name, tag)};
      if (!value) return {{}, fmt::format("state '{}': summary '{}' has a value that is not a number", name, tag)};
      out.samples.push_back(*value);
    }
  }
  if (out.samples.empty()) {
    if (!skipped.empty())
      return {{},
              state_regex.empty() ? fmt::format("every state was skipped; {}", skipped)
                                  : fmt::format("every state matching '{}' was skipped; {}", state_regex, skipped)};
    if (state_regex.empty()) return {{}, "nvbench output has no states"};
    return {{}, fmt::format("no nvbench state matches '{}' (states: {})", state_regex, some(names))};
  }
  return out;
}

}  // namespace abtrack::metrics
