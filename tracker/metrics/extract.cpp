#include "metrics/extract.hpp"

#include <cmath>
#include <regex>

#include <fmt/format.h>

#include "metrics/formats.hpp"
#include "util/files.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace abtrack::metrics {
namespace {

constexpr std::size_t kMaxCandidates = 4096;

// The end (one past the matching '}') of the object starting at `start`, aware of strings.
std::optional<std::size_t> match_braces(std::string_view t, std::size_t start) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = start; i < t.size(); ++i) {
    char c = t[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
      if (depth < 0) return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<nlohmann::json> last_json_object(std::string_view t, std::string* why) {
  // Candidates: '{' as the first non-blank character of a line, tried from the last one back.
  // A candidate whose object contains the best one so far replaces it (a pretty-printed object
  // has nested '{' lines); one that ends before the best starts is an earlier object, or a
  // sibling nested in the same enclosing object (benchmark tools print lists of objects one per
  // line), so the search goes on for an enclosing one.
  std::optional<nlohmann::json> best;
  std::size_t best_start = 0, best_end = 0, tried = 0;
  std::string first_error;
  bool brace_after_text = false;  // a '{' after other text on its line (not a candidate)
  std::size_t line_end = t.size();
  while (line_end > 0 && tried < kMaxCandidates) {
    std::size_t line_start = t.rfind('\n', line_end - 1);
    line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
    if (line_start == line_end && line_start > 0) {  // empty line
      line_end = line_start - 1;
      continue;
    }
    std::size_t p = line_start;
    while (p < line_end && (t[p] == ' ' || t[p] == '\t' || t[p] == '\r')) ++p;
    if (p < line_end && t[p] != '{' && t.substr(p, line_end - p).find('{') != std::string_view::npos)
      brace_after_text = true;
    if (p < line_end && t[p] == '{') {
      ++tried;
      auto end = match_braces(t, p);
      if (end) {
        if (best && *end <= best_start) {
          // not enclosing the best: skip
        } else if (!best || *end >= best_end) {
          auto v = nlohmann::json::parse(t.substr(p, *end - p), nullptr, false);
          if (!v.is_discarded() && v.is_object()) {
            best = std::move(v);
            best_start = p;
            best_end = *end;
          } else if (first_error.empty() && !best) {
            std::string line(util::trim(t.substr(p, std::min<std::size_t>(line_end - p, 120))));
            const bool non_finite = line.find("NaN") != std::string::npos || line.find("nan") != std::string::npos ||
                                    line.find("Infinity") != std::string::npos || line.find("inf") != std::string::npos;
            first_error = fmt::format("the last JSON-looking output does not parse{}: {}",
                                      non_finite ? " (NaN and Infinity are not JSON)" : "", line);
          }
        }
      } else if (first_error.empty() && !best) {
        first_error = "the last JSON-looking output is not a complete object";
      }
    }
    if (line_start == 0) break;
    line_end = line_start - 1;
  }
  if (!best && why)
    *why =
        !first_error.empty() ? first_error
        : brace_after_text
            ? "no JSON object starts a line (a '{' after other text on its line is not read: print the object on a line of its own)"
            : "no JSON object on stdout";
  return best;
}

Extraction from_json(const nlohmann::json& object, std::string_view path) {
  const nlohmann::json* cur = &object;
  for (const auto& seg : util::split(path, '.')) {
    if (cur->is_object()) {
      auto it = cur->find(seg);
      if (it == cur->end()) return {{}, fmt::format("json path '{}' not found (no key '{}')", path, seg)};
      cur = &*it;
    } else if (cur->is_array()) {
      auto idx = util::parse_double(seg);
      if (!idx || *idx < 0 || std::floor(*idx) != *idx || *idx >= static_cast<double>(cur->size()))
        return {{}, fmt::format("json path '{}' not found (no index '{}')", path, seg)};
      cur = &(*cur)[static_cast<std::size_t>(*idx)];
    } else {
      return {{}, fmt::format("json path '{}' not found ('{}' is inside a {})", path, seg, cur->type_name())};
    }
  }
  Extraction out;
  if (cur->is_null()) return {{}, fmt::format("json path '{}' is null", path)};
  if (cur->is_number()) {
    out.samples.push_back(cur->get<double>());
  } else if (cur->is_array()) {
    if (cur->empty()) return {{}, fmt::format("json path '{}' is an empty array", path)};
    for (std::size_t i = 0; i < cur->size(); ++i) {
      const auto& v = (*cur)[i];
      if (!v.is_number())
        return {{}, fmt::format("json path '{}' element {} is a {}, not a number", path, i, v.type_name())};
      out.samples.push_back(v.get<double>());
    }
  } else {
    return {{}, fmt::format("json path '{}' is a {}, not a number or an array of numbers", path, cur->type_name())};
  }
  for (double v : out.samples)
    if (!std::isfinite(v)) return {{}, fmt::format("json path '{}' has a non-finite value", path)};
  return out;
}

Extraction from_regex(std::string_view text, const std::string& pattern) {
  auto compiled = util::compile_regex(pattern);
  if (!compiled) return {{}, fmt::format("regex does not compile: {}", compiled.error())};
  const std::regex& re = compiled.value();
  Extraction out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    for (std::cregex_iterator it(line.data(), line.data() + line.size(), re), end; it != end; ++it) {
      if (it->size() < 2 || !(*it)[1].matched) continue;
      std::string s = (*it)[1].str();
      auto v = util::parse_double(s);
      if (!v) return {{}, fmt::format("regex matched '{}', which is not a number", s)};
      if (!std::isfinite(*v)) return {{}, fmt::format("regex matched '{}', which is not finite", s)};
      out.samples.push_back(*v);
    }
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  if (out.samples.empty()) return {{}, fmt::format("regex '{}' matched nothing", pattern)};
  return out;
}

namespace {

constexpr std::uintmax_t kMaxFileBytes = 256u << 20;

// A text and its JSON document, parsed on first use (several metrics often read one file).
struct Source {
  std::string text;
  std::optional<nlohmann::json> doc;
  std::string why;
  bool parsed = false;

  const nlohmann::json* document() {
    if (!parsed) {
      doc = json_document(text, &why);
      parsed = true;
    }
    return doc ? &*doc : nullptr;
  }
};

Extraction from_document(const plan::Metric& m, Source& src) {
  if (m.source == plan::Source::regex) return from_regex(src.text, m.selector);
  if (m.source == plan::Source::ncu)
    return {{}, "an ncu metric is read by running the command under ncu, not from its output"};
  const auto* doc = src.document();
  if (!doc) {
    std::string why = src.why;
    if (!m.file.empty() && why == "no JSON object on stdout") why = "no JSON object in the file";
    return {{}, why};
  }
  switch (m.source) {
    case plan::Source::json:
      // An object is the document itself; anything else (a bare array, ...) is searched for the
      // last object as stdout always was.
      if (!doc->is_object()) {
        auto last = last_json_object(src.text, &src.why);
        if (!last) return {{}, src.why};
        return from_json(*last, m.selector);
      }
      return from_json(*doc, m.selector);
    case plan::Source::hyperfine: return from_hyperfine(*doc, m.selector, m.filter);
    case plan::Source::gbench: return from_gbench(*doc, m.selector, m.filter);
    case plan::Source::nvbench: return from_nvbench(*doc, m.selector, m.filter);
    case plan::Source::regex:
    case plan::Source::ncu: break;
  }
  return {{}, "unknown metric format"};
}

Extraction scaled(Extraction e, double scale) {
  if (!e.ok() || scale == 1) return e;
  for (double& v : e.samples) {
    v *= scale;
    if (!std::isfinite(v))
      return {{}, fmt::format("a sample times scale {} is not finite", util::format_number(scale))};
  }
  return e;
}

std::optional<FileStamp> stamp_of(const std::filesystem::path& p) {
  std::error_code ec;
  auto size = std::filesystem::file_size(p, ec);
  if (ec) return std::nullopt;
  auto modified = std::filesystem::last_write_time(p, ec);
  if (ec) return std::nullopt;
  return FileStamp{modified, size};
}

}  // namespace

Extraction extract(const plan::Metric& metric, std::string_view text) {
  Source src{std::string(text), std::nullopt, {}, false};
  return scaled(from_document(metric, src), metric.scale);
}

std::string MetricFiles::relative(const plan::Metric& metric) const {
  return plan && cell ? plan::substitute(*plan, *cell, metric.file, false) : metric.file;
}

std::filesystem::path MetricFiles::resolve(const plan::Metric& metric) const { return dir / relative(metric); }

FileStamps stamp_files(const std::vector<plan::Metric>& metrics, const MetricFiles& files) {
  FileStamps out;
  for (const auto& m : metrics)
    if (!m.file.empty()) out[files.resolve(m)] = stamp_of(files.resolve(m));
  return out;
}

std::map<std::string, Extraction> extract_all(const std::vector<plan::Metric>& metrics, std::string_view text,
                                              const MetricFiles* files, const FileStamps* before) {
  std::map<std::string, Extraction> out;
  Source stdout_source{std::string(text), std::nullopt, {}, false};
  std::map<std::filesystem::path, Source> file_sources;
  std::map<std::filesystem::path, std::string> file_errors;
  for (const auto& m : metrics) {
    if (m.source == plan::Source::ncu) continue;  // measured by its own invocation (runner/profile.hpp)
    Extraction e;
    if (m.file.empty()) {
      e = from_document(m, stdout_source);
    } else if (!files) {
      e = {{}, fmt::format("it is read from file '{}', which only running the command writes", m.file)};
    } else {
      auto path = files->resolve(m);
      std::string shown = files->relative(m);
      if (!file_sources.count(path) && !file_errors.count(path)) {
        std::error_code ec;
        auto now = stamp_of(path);
        if (!std::filesystem::exists(path, ec)) {
          file_errors[path] = fmt::format("file '{}' not found (looked for {})", shown, path.string());
        } else if (std::filesystem::is_directory(path, ec)) {
          file_errors[path] = fmt::format("file '{}' is a directory", shown);
        } else if (now && now->size > kMaxFileBytes) {
          file_errors[path] =
              fmt::format("file '{}' has {} bytes; at most {} are read", shown, now->size, kMaxFileBytes);
        } else if (auto was = before ? before->find(path) : FileStamps::const_iterator{};
                   before && was != before->end() && was->second && now && *was->second == *now) {
          file_errors[path] =
              fmt::format("file '{}' was not written by the command (same size and time as before it ran)", shown);
        } else if (auto read = util::try_read_file(path)) {
          file_sources[path].text = std::move(read).value();
        } else {
          file_errors[path] = fmt::format("file '{}' cannot be read: {}", shown, read.error());
        }
      }
      if (auto fe = file_errors.find(path); fe != file_errors.end()) e = {{}, fe->second};
      else e = from_document(m, file_sources.at(path));
      if (!e.ok() && !file_errors.count(path)) e.error = fmt::format("{} (in file '{}')", e.error, shown);
    }
    e = scaled(std::move(e), m.scale);
    if (!e.ok()) e.error = fmt::format("metric '{}': {}", m.name, e.error);
    out.emplace(m.name, std::move(e));
  }
  return out;
}

}  // namespace abtrack::metrics
