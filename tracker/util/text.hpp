#pragma once
// Small text helpers shared by the layers: shell quoting, spelling suggestions, trimming.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abtrack::util {

// Quotes `s` for /bin/sh so that it is always one literal word: 'it'\''s'.
std::string shell_quote(std::string_view s);

// The candidate closest to `word` by edit distance when it is close enough to be a likely
// typo ("did you mean"), else nullopt.
std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// ", did you mean 'x'?" or "" — for appending to a message.
std::string suggestion_suffix(std::string_view word, const std::vector<std::string>& candidates);

// Strips ASCII whitespace at both ends.
std::string_view trim(std::string_view s);

// Splits on `sep` (no trimming; empty fields kept).
std::vector<std::string> split(std::string_view s, char sep);

// Parses a whole string as a finite or non-finite double (strtod rules, no trailing text).
std::optional<double> parse_double(std::string_view s);

// A duration in seconds: a number with a unit (`90s`, `30m`, `2h`, `1.5h`), parts summed
// (`1h30m`), or a plain number of seconds. Empty for anything else, or for a duration <= 0.
std::optional<double> parse_duration(std::string_view s);

// The last `max_bytes` of `s`, cut at a UTF-8 boundary, invalid bytes replaced by U+FFFD, so
// the result is valid UTF-8 for JSON.
std::string utf8_tail(std::string_view s, std::size_t max_bytes);

// True for a C identifier: a letter or '_', then letters, digits or '_'.
bool is_identifier(std::string_view s);
// The value of `s` when it is an integer written as plain digits (an optional '-', no leading
// zero, at most 15 characters: exact in a double); a plan value so written is a number.
std::optional<long long> plain_integer(std::string_view s);

// Formats a number compactly for tables and messages: up to 4 significant digits.
std::string format_number(double v);

}  // namespace abtrack::util
