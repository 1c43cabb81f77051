#pragma once
// Phase timings for performance work: with ABTRACK_TRACE=1 in the environment, each call
// prints "abtrack: trace: <ms since start> <what>" to stderr. Free when off.
#include <string_view>

namespace abtrack::util {
void trace(std::string_view what);
}  // namespace abtrack::util
