#include "doc/regions.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

struct Marker {
  bool begin = false;
  std::string name;
};

// Parses a line that is exactly a marker (surrounding blanks allowed).
std::optional<Marker> parse_marker(std::string_view line) {
  line = util::trim(line);
  if (!line.starts_with("<!--") || !line.ends_with("-->")) return std::nullopt;
  line = util::trim(line.substr(4, line.size() - 7));
  if (!line.starts_with("abtrack:")) return std::nullopt;
  line.remove_prefix(8);
  Marker m;
  if (line.starts_with("begin")) m.begin = true;
  else if (!line.starts_with("end")) return std::nullopt;
  line.remove_prefix(m.begin ? 5 : 3);
  if (line.empty() || (line[0] != ' ' && line[0] != '\t')) return std::nullopt;
  m.name = std::string(util::trim(line));
  return m;
}

}  // namespace

std::vector<Region> find_regions(std::string_view text, const std::string& file) {
  std::vector<Region> out;
  std::optional<Region> open;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    std::size_t nl = text.find('\n', pos);
    std::size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    auto marker = parse_marker(text.substr(pos, next - pos));
    if (marker) {
      Location where{file, line_no, 1};
      if (std::find(kRegionNames.begin(), kRegionNames.end(), marker->name) == kRegionNames.end())
        throw Error(Exit::usage, where,
                    fmt::format("unknown abtrack region '{}'{}", marker->name,
                                util::suggestion_suffix(marker->name, kRegionNames)),
                    "the regions are summary, results and runs");
      if (marker->begin) {
        if (open)
          throw Error(Exit::usage, where,
                      fmt::format("region '{}' begins inside region '{}' (opened at line {})", marker->name, open->name,
                                  open->begin_line),
                      fmt::format("add <!-- abtrack:end {} --> before it", open->name));
        for (const auto& r : out)
          if (r.name == marker->name)
            throw Error(Exit::usage, where,
                        fmt::format("region '{}' appears twice (first at line {})", marker->name, r.begin_line));
        open = Region{marker->name, next, 0, line_no};
      } else {
        if (!open || open->name != marker->name)
          throw Error(
              Exit::usage, where,
              open ? fmt::format("end of region '{}' inside region '{}' (opened at line {})", marker->name, open->name,
                                 open->begin_line)
                   : fmt::format("end of region '{}' without its begin marker", marker->name),
              fmt::format("regions look like <!-- abtrack:begin {0} --> ... <!-- abtrack:end {0} -->", marker->name));
        open->content_end = pos;
        out.push_back(*open);
        open.reset();
      }
    }
    pos = next;
  }
  if (open)
    throw Error(Exit::usage, Location{file, open->begin_line, 1},
                fmt::format("region '{}' has no end marker", open->name),
                fmt::format("add <!-- abtrack:end {} --> on a line of its own", open->name));
  return out;
}

std::string splice(std::string_view text, const std::string& file, const std::map<std::string, std::string>& content) {
  std::string out;
  out.reserve(text.size() + 4096);
  std::size_t pos = 0;
  for (const auto& r : find_regions(text, file)) {
    out.append(text.substr(pos, r.content_begin - pos));
    // A begin marker on the file's last line without a newline: give the content a line.
    if (!out.empty() && out.back() != '\n') out += '\n';
    auto it = content.find(r.name);
    if (it != content.end()) out += it->second;
    else out.append(text.substr(r.content_begin, r.content_end - r.content_begin));
    pos = r.content_end;
  }
  out.append(text.substr(pos));
  return out;
}

std::map<std::string, std::string> region_contents(std::string_view text, const std::string& file) {
  std::map<std::string, std::string> out;
  for (const auto& r : find_regions(text, file))
    out[r.name] = std::string(text.substr(r.content_begin, r.content_end - r.content_begin));
  return out;
}

}  // namespace abtrack::doc
