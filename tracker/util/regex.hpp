#pragma once
// Compiling a regular expression the user wrote, which may not compile.
#include <regex>
#include <string>

#include "util/expected.hpp"

namespace abtrack::util {

// `pattern` as an ECMAScript regex, or why it does not compile (std::regex_error's words,
// Exit::usage).
Expected<std::regex> compile_regex(const std::string& pattern);

}  // namespace abtrack::util
