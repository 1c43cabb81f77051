// The loader's reading of YAML nodes and its diagnostics.
#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "plan/load.hpp"
#include "plan/loader.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::plan {
namespace fs = std::filesystem;

Location Loader::at(const YAML::Mark& m) const {
  if (m.is_null()) return {m_file, 0, 0};
  return {m_file, m.line + 1, m.column + 1};
}

void Loader::error(Location where, std::string msg, std::string hint) {
  m_errors.push_back(Diagnostic{std::move(where), std::move(msg), std::move(hint)});
}

bool Loader::has_control(std::string_view s, bool tab_ok) {
  return std::any_of(s.begin(), s.end(), [&](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && !(tab_ok && c == '\t')) || u == 0x7f;
  });
}

void Loader::warn(Location where, std::string msg, std::string hint) {
  m_warnings.push_back(Diagnostic{std::move(where), std::move(msg), std::move(hint)});
}

void Loader::missing(const char* key, std::string hint) {
  error({m_file, 0, 0}, fmt::format("missing required key '{}'", key), std::move(hint));
}

void Loader::finish() {
  if (!m_errors.empty()) {
    auto key = [](const Diagnostic& d) {
      return d.where ? std::pair(d.where->line, d.where->column) : std::pair(0, 0);
    };
    std::stable_sort(m_errors.begin(), m_errors.end(),
                     [&](const Diagnostic& a, const Diagnostic& b) { return key(a) < key(b); });
    throw Error(Exit::usage, std::move(m_errors));
  }
}

Loader::KeyMap Loader::mapping(const YAML::Node& n, const std::vector<std::string>& allowed, const char* what) {
  KeyMap out;
  for (auto it = n.begin(); it != n.end(); ++it) {
    // Copies: yaml-cpp's iterator hands out a temporary proxy, so a reference to it->first
    // dangles at the end of the statement (ASan: stack-use-after-scope).
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar()) {
      error(at(k.Mark()), fmt::format("a {} must be a plain name", what));
      continue;
    }
    std::string key = k.Scalar();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      error(at(k.Mark()), fmt::format("unknown {} '{}'{}", what, key, util::suggestion_suffix(key, allowed)));
      continue;
    }
    if (auto prev = out.find(key); prev != out.end()) {
      error(at(k.Mark()),
            fmt::format("duplicate key '{}' (first given at line {})", key, prev->second.first.Mark().line + 1));
      continue;
    }
    out.emplace(key, std::pair{k, v});
  }
  return out;
}

std::vector<std::pair<YAML::Node, YAML::Node>> Loader::ordered(const YAML::Node& n, const char* what) {
  std::vector<std::pair<YAML::Node, YAML::Node>> out;
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar().empty()) {
      error(at(it->first.Mark()), fmt::format("a {} must be a plain name", what));
      continue;
    }
    if (!seen.insert(it->first.Scalar()).second) {
      error(at(it->first.Mark()), fmt::format("duplicate {} '{}'", what, it->first.Scalar()));
      continue;
    }
    out.emplace_back(it->first, it->second);
  }
  return out;
}

std::optional<std::string> Loader::scalar(const YAML::Node& n, const std::string& what) {
  if (n.IsScalar()) return n.Scalar();
  const bool flow = (n.IsMap() || n.IsSequence()) && n.Style() == YAML::EmitterStyle::Flow;
  error(at(n.Mark()), fmt::format("{} must be a single value, not {}", what, kind(n)),
        flow ? "an unquoted value that starts with '{' or '[' is a YAML mapping or list: quote the whole value to give "
               "it as text, e.g. command: \"{codec} < in\""
             : "");
  return std::nullopt;
}

std::optional<double> Loader::number(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) {
    error(at(n.Mark()), fmt::format("{} must be a number, not {}", what, kind(n)));
    return std::nullopt;
  }
  auto v = util::parse_double(n.Scalar());
  if (!v) error(at(n.Mark()), fmt::format("{} must be a number, not '{}'", what, n.Scalar()));
  return v;
}

std::string Loader::kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "empty";
    default: return "a value";
  }
}

std::string Loader::repo_path(const YAML::Node& n, const std::string& raw, const char* what, bool allow_root) {
  fs::path p(raw);
  if (raw.empty() || p.is_absolute()) {
    error(at(n.Mark()), fmt::format("{} must be a path relative to the repository root, not '{}'", what, raw));
    return {};
  }
  fs::path norm = p.lexically_normal();
  std::string s = norm.generic_string();
  while (!s.empty() && s.back() == '/') s.pop_back();
  if (s == "." && allow_root) return {};
  if (s.empty() || s == "." || s == ".." || s.starts_with("../")) {
    error(at(n.Mark()), fmt::format("{} '{}' is outside the repository", what, raw),
          "paths in the plan are relative to the repository root");
    return {};
  }
  if (s == ".git" || s.starts_with(".git/")) {
    error(at(n.Mark()), fmt::format("{} '{}' is inside .git", what, raw));
    return {};
  }
  std::error_code ec;
  fs::path root = fs::weakly_canonical(m_root, ec);
  fs::path full = fs::weakly_canonical(m_root / norm, ec);
  auto rel = full.lexically_relative(root).generic_string();
  if (!ec && (rel.empty() || rel == ".." || rel.starts_with("../"))) {
    error(at(n.Mark()), fmt::format("{} '{}' leads outside the repository through a symbolic link", what, raw));
    return {};
  }
  return s;
}

std::optional<Assignment> Loader::assignment(const YAML::Node& n, const Plan& plan, const char* what) {
  if (!n.IsMap() || n.size() == 0) {
    error(at(n.Mark()), fmt::format("{} must be a mapping of axes to values, e.g. {{warps: 4}}", what));
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (const auto& a : plan.axes) names.push_back(a.name);
  Assignment out;
  bool ok = true;
  for (auto& [k, v] : ordered(n, "axis")) {
    const std::string key = k.Scalar();  // a structured binding cannot be captured before C++20 in clang 14
    auto it = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const Axis& a) { return a.name == key; });
    if (it == plan.axes.end()) {
      error(at(k.Mark()),
            fmt::format("{} names unknown axis '{}'{}", what, k.Scalar(), util::suggestion_suffix(k.Scalar(), names)));
      ok = false;
      continue;
    }
    auto value = scalar(v, fmt::format("{} value of '{}'", what, k.Scalar()));
    if (!value) {
      ok = false;
      continue;
    }
    if (std::find(it->values.begin(), it->values.end(), *value) == it->values.end()) {
      error(at(v.Mark()),
            fmt::format("{} gives axis '{}' the value '{}', which the axis does not have{}", what, k.Scalar(), *value,
                        util::suggestion_suffix(*value, it->values)),
            fmt::format("the values of '{}' are: {}", k.Scalar(), fmt::join(it->values, ", ")));
      ok = false;
      continue;
    }
    out.emplace_back(k.Scalar(), *value);
  }
  if (!ok) return std::nullopt;
  // Keep plan axis order so labels read the same everywhere.
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return std::find(names.begin(), names.end(), a.first) < std::find(names.begin(), names.end(), b.first);
  });
  return out;
}

std::optional<double> Loader::percent(const YAML::Node& n, const char* what) {
  if (!n.IsScalar()) {
    error(at(n.Mark()), fmt::format("{} must be a percentage such as -18%", what));
    return std::nullopt;
  }
  std::string s(util::trim(n.Scalar()));
  if (!s.empty() && s.back() == '%') s.pop_back();
  auto v = util::parse_double(s);
  if (!v || !std::isfinite(*v)) {
    error(at(n.Mark()), fmt::format("{} must be a percentage such as -18%, not '{}'", what, n.Scalar()));
    return std::nullopt;
  }
  return v;
}

}  // namespace abtrack::plan
