#include "json_line.hpp"

#include <cmath>
#include <cstdio>

namespace abtrack::kernels::mla_decode {

std::string json_quote(const std::string& value) {
  std::string out = "\"";
  for (const unsigned char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

void JsonLine::key(const std::string& k) {
  if (!m_body.empty()) m_body += ", ";
  m_body += json_quote(k) + ": ";
}

void JsonLine::add(const std::string& k, double value) {
  key(k);
  m_body += json_number(value);
}

void JsonLine::add(const std::string& k, long long value) {
  key(k);
  m_body += std::to_string(value);
}

void JsonLine::add(const std::string& k, bool value) {
  key(k);
  m_body += value ? "true" : "false";
}

void JsonLine::add(const std::string& k, const std::string& value) {
  key(k);
  m_body += json_quote(value);
}

void JsonLine::add(const std::string& k, const std::vector<double>& values) {
  key(k);
  m_body += "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) m_body += ", ";
    m_body += json_number(values[i]);
  }
  m_body += "]";
}

void JsonLine::add_null(const std::string& k) {
  key(k);
  m_body += "null";
}

}  // namespace abtrack::kernels::mla_decode
