#pragma once
// The generated regions of the A/B document: finding them and splicing new content in,
// keeping every byte outside them.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace abtrack::doc {

// The region names abtrack fills.
inline const std::vector<std::string> kRegionNames = {"summary", "results", "runs"};

struct Region {
  std::string name;
  std::size_t content_begin = 0;  // offset just after the begin marker's line
  std::size_t content_end = 0;    // offset of the end marker's line
  int begin_line = 0;             // 1-based line of the begin marker
};

// The regions of `text`, in order. A marker is a line of its own:
//   <!-- abtrack:begin NAME -->  ...  <!-- abtrack:end NAME -->
// Throws Error(usage) naming FILE:LINE for a region without its end, an end without a begin,
// nesting, a repeated region, or an unknown name (with "did you mean").
std::vector<Region> find_regions(std::string_view text, const std::string& file);

// Replaces the content of each region named in `content` (content should end with '\n');
// everything outside the regions is kept byte for byte. Regions not named keep their content.
std::string splice(std::string_view text, const std::string& file, const std::map<std::string, std::string>& content);

// The current content of each region of `text`.
std::map<std::string, std::string> region_contents(std::string_view text, const std::string& file);

}  // namespace abtrack::doc
