#include "util/error.hpp"

#include <fmt/format.h>

namespace abtrack {
namespace {
std::string first_message(const std::vector<Diagnostic>& ds) {
  return ds.empty() ? std::string("error") : format_diagnostic(ds.front());
}
}  // namespace

std::string format_diagnostic(const Diagnostic& d) {
  std::string out;
  if (d.where && !d.where->file.empty()) {
    out = d.where->file;
    if (d.where->line > 0) {
      out += fmt::format(":{}", d.where->line);
      if (d.where->column > 0) out += fmt::format(":{}", d.where->column);
    }
    out += ": ";
  }
  out += d.message;
  if (!d.hint.empty()) out += "\n  hint: " + d.hint;
  return out;
}

Error::Error(Exit code, std::string message, std::string hint)
    : Error(code, std::vector<Diagnostic>{Diagnostic{std::nullopt, std::move(message), std::move(hint)}}) {}

Error::Error(Exit code, Location where, std::string message, std::string hint)
    : Error(code, std::vector<Diagnostic>{Diagnostic{std::move(where), std::move(message), std::move(hint)}}) {}

Error::Error(Exit code, std::vector<Diagnostic> diagnostics)
    : std::runtime_error(first_message(diagnostics)), m_code(code), m_diagnostics(std::move(diagnostics)) {}

Error& Error::context(const std::string& what) {
  if (!m_diagnostics.empty()) m_diagnostics.front().message = what + ": " + m_diagnostics.front().message;
  return *this;
}

}  // namespace abtrack
