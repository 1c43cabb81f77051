// libFuzzer target: the metric extractors on arbitrary command output. The first byte picks
// the regex (from a fixed list: patterns come from the plan, output from the command); the rest
// is stdout. Extraction never throws and never crashes, whatever the command prints.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/extract.hpp"
#include "plan/plan.hpp"

namespace {
const char* const kRegexes[] = {R"(throughput: ([0-9.eE+-]+))", R"(tput=(\S+))", R"(^(\d+)$)", R"((.*))"};
const char* const kPaths[] = {"t", "samples_us", "res.lat_us", "a.0.b", "x.y.z.0"};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 256 * 1024) return -1;
  const std::uint8_t pick = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string why;
  if (auto obj = abtrack::metrics::last_json_object(text, &why))
    (void)abtrack::metrics::from_json(*obj, kPaths[pick % 5]);
  (void)abtrack::metrics::from_regex(text, kRegexes[pick % 4]);
  std::vector<abtrack::plan::Metric> metrics(2);
  metrics[0].name = "t";
  metrics[0].source = abtrack::plan::Source::json;
  metrics[0].selector = kPaths[(pick >> 2) % 5];
  metrics[1].name = "r";
  metrics[1].source = abtrack::plan::Source::regex;
  metrics[1].selector = kRegexes[(pick >> 4) % 4];
  (void)abtrack::metrics::extract_all(metrics, text);
  return 0;
}
