#include "metrics/ncu.hpp"

#include <algorithm>
#include <cmath>

#include "util/text.hpp"

namespace abtrack::metrics {

std::optional<std::vector<std::string>> csv_fields(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> out;
  std::size_t i = 0;
  while (true) {
    if (i >= line.size() || line[i] != '"') return std::nullopt;
    std::string field;
    ++i;
    while (true) {
      if (i >= line.size()) return std::nullopt;
      if (line[i] == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        ++i;
        break;
      }
      field += line[i++];
    }
    out.push_back(std::move(field));
    if (i == line.size()) return out;
    if (line[i] != ',') return std::nullopt;
    ++i;
  }
}

std::optional<double> ncu_number(std::string_view value) {
  std::string digits;
  for (char c : util::trim(value))
    if (c != ',') digits += c;
  auto v = util::parse_double(digits);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

NcuOutput parse_ncu(std::string_view text) {
  NcuOutput out;
  // Columns of the current header: kernel, metric, unit, value; the header's width.
  std::optional<std::vector<std::size_t>> columns;
  std::size_t width = 0;
  bool listing_kernels = false;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find("ERR_NVGPUCTRPERM") != std::string_view::npos) out.no_permission = true;
    if (line.starts_with("==ERROR== ")) {
      out.errors.emplace_back(util::trim(line.substr(10)));
      continue;
    }
    if (line.starts_with("==WARNING== No kernels were profiled")) {
      out.no_kernels = true;
      continue;
    }
    if (line == "Available Kernels:") {
      listing_kernels = true;
      continue;
    }
    if (listing_kernels) {
      // "1. tidy": the list runs until a line that is not one of its entries.
      auto dot = line.find(". ");
      if (dot != std::string_view::npos && dot > 0 &&
          std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(dot),
                      [](char c) { return c >= '0' && c <= '9'; })) {
        out.available_kernels.emplace_back(line.substr(dot + 2));
        continue;
      }
      listing_kernels = false;
    }
    if (!line.starts_with("\"")) continue;
    auto fields = csv_fields(line);
    if (!fields) continue;
    if (fields->size() >= 2 && (*fields)[0] == "ID" && (*fields)[1] == "Process ID") {
      std::vector<std::size_t> cols;
      for (const char* name : {"Kernel Name", "Metric Name", "Metric Unit", "Metric Value"}) {
        auto it = std::find(fields->begin(), fields->end(), name);
        if (it == fields->end()) break;
        cols.push_back(static_cast<std::size_t>(it - fields->begin()));
      }
      columns = cols.size() == 4 ? std::optional(cols) : std::nullopt;
      width = fields->size();
      continue;
    }
    if (!columns || fields->size() != width) continue;
    const auto& c = *columns;
    out.rows.push_back(NcuRow{(*fields)[c[0]], (*fields)[c[1]], (*fields)[c[2]], (*fields)[c[3]]});
  }
  return out;
}

}  // namespace abtrack::metrics
