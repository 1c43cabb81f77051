// libFuzzer target: plan::parse_plan on arbitrary text. Any input must either parse or throw
// abtrack::Error (a plan error, exit 2); no crash, no other exception, bounded memory and time.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "plan/load.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return -1;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto plan = abtrack::plan::parse_plan(text, "fuzz.yaml", "/nonexistent-fuzz-root");
    (void)plan.cells();
  } catch (const abtrack::Error&) {}
  return 0;
}
