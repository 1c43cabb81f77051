#include "runner/tools.hpp"

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include <fmt/format.h>

namespace abtrack::runner {
namespace {

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string find_tool(std::string_view name, const char* env_var, std::string* looked) {
  if (const char* given = std::getenv(env_var); given && *given) {
    if (executable(given)) return given;
    if (looked) *looked = fmt::format("{}={} is not an executable file", env_var, given);
    return {};
  }
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      auto colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
      if (dir.empty()) continue;
      auto candidate = std::filesystem::path(dir) / name;
      if (executable(candidate)) return candidate.string();
    }
  auto cuda = std::filesystem::path("/usr/local/cuda/bin") / name;
  if (executable(cuda)) return cuda.string();
  if (looked) *looked = fmt::format("{} is not on PATH nor in /usr/local/cuda/bin ({} names another)", name, env_var);
  return {};
}

}  // namespace abtrack::runner
