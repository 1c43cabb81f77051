#include "util/trace.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace abtrack::util {

void trace(std::string_view what) {
  static const bool on = std::getenv("ABTRACK_TRACE") != nullptr;
  static const auto start = std::chrono::steady_clock::now();
  if (!on) return;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "abtrack: trace: %7.2f ms %.*s\n", ms, static_cast<int>(what.size()), what.data());
}

}  // namespace abtrack::util
