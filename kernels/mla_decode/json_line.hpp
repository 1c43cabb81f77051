// A one-line JSON object writer for the bench driver's result line (writing only; no parsing).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace abtrack::kernels::mla_decode {

// Builds `{"k": v, ...}` in insertion order. Non-finite numbers are written as null.
class JsonLine {
 public:
  void add(const std::string& key, double value);
  void add(const std::string& key, long long value);
  void add(const std::string& key, int value) { add(key, static_cast<long long>(value)); }
  void add(const std::string& key, bool value);
  void add(const std::string& key, const std::string& value);
  void add(const std::string& key, const char* value) { add(key, std::string(value)); }
  void add(const std::string& key, const std::vector<double>& values);
  void add_null(const std::string& key);
  // Adds `value` or null.
  template <typename T>
  void add_optional(const std::string& key, const std::optional<T>& value) {
    if (value) add(key, *value);
    else add_null(key);
  }
  // The finished object, without a trailing newline.
  std::string str() const { return "{" + m_body + "}"; }

 private:
  void key(const std::string& k);
  std::string m_body;
};

// `value` as a JSON string literal (quoted and escaped).
std::string json_quote(const std::string& value);
// `value` as a JSON number with round-trip precision, or null when not finite.
std::string json_number(double value);

}  // namespace abtrack::kernels::mla_decode
