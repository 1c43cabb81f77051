#include "util/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace abtrack::util {

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    // A suggestion must keep something of the word: "5" is not a typo of "4".
    if (d < best_d && d < word.size()) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string suggestion_suffix(std::string_view word, const std::vector<std::string>& candidates) {
  auto s = did_you_mean(word, candidates);
  return s ? fmt::format(", did you mean '{}'?", *s) : std::string();
}

std::string_view trim(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::optional<double> parse_double(std::string_view s) {
  std::string tmp(trim(s));
  if (tmp.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_duration(std::string_view text) {
  std::string_view s = trim(text);
  if (auto plain = parse_double(s)) return *plain > 0 && std::isfinite(*plain) ? plain : std::nullopt;
  double total = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == 0 || i == s.size()) return std::nullopt;
    auto value = parse_double(s.substr(0, i));
    const char unit = s[i];
    const double scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
    if (!value || scale == 0) return std::nullopt;
    total += *value * scale;
    s.remove_prefix(i + 1);
  }
  return total > 0 ? std::optional<double>(total) : std::nullopt;
}

std::string utf8_tail(std::string_view s, std::size_t max_bytes) {
  if (s.size() > max_bytes) {
    s.remove_prefix(s.size() - max_bytes);
    while (!s.empty() && (static_cast<unsigned char>(s.front()) & 0xC0) == 0x80) s.remove_prefix(1);
  }
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 1 && c < 0x20 && c != '\n' && c != '\t' && c != '\r') ok = false;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += 1;
    }
  }
  return out;
}

std::optional<long long> plain_integer(std::string_view s) {
  const std::size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
  bool digits = s.size() > start && s.size() <= 15 && !(s[start] == '0' && s.size() > start + 1);
  for (std::size_t i = start; digits && i < s.size(); ++i) digits = s[i] >= '0' && s[i] <= '9';
  if (!digits) return std::nullopt;
  return std::stoll(std::string(s));
}

bool is_identifier(std::string_view s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  double a = std::fabs(v);
  // Up to 4 significant digits, whole numbers from 1000 up (11120, not 1.112e+04).
  if (a >= 1000 && a < 1e9) return fmt::format("{:.0f}", v);
  if (a >= 1e-3) return fmt::format("{:.4g}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace abtrack::util
