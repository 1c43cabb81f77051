#include "util/regex.hpp"

namespace abtrack::util {

Expected<std::regex> compile_regex(const std::string& pattern) {
  // std::regex reports a bad pattern only by throwing: this is where that becomes a value.
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Failure(e.what(), Exit::usage);
  }
}

}  // namespace abtrack::util
