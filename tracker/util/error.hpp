#pragma once
// The one error type of abtrack, its exit codes, and diagnostics with positions.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace abtrack {

// Process exit codes (README.md lists them under "Commands").
enum class Exit : int {
  ok = 0,
  run_failed = 1,        // a run failed or was invalid (it is still committed)
  usage = 2,             // usage or plan error
  environment = 3,       // not in a git repository, cannot commit, ...
  nothing_compared = 4,  // `check`: no cell had anything to be compared with (nothing was checked)
  interrupted = 130,
};

// A position in a user's file; line and column are 1-based, 0 when unknown.
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

// One message for the user: "FILE:LINE:COL: message", with an optional hint line.
struct Diagnostic {
  std::optional<Location> where;
  std::string message;
  std::string hint;
};

// Formats a diagnostic as abtrack prints it after "abtrack: error: " (no trailing newline;
// a hint goes on its own indented line).
std::string format_diagnostic(const Diagnostic& d);

// The exception every layer throws. Carries one or more diagnostics (a plan with several
// mistakes reports all of them) and the exit code the CLI returns for it.
class Error : public std::runtime_error {
 public:
  Error(Exit code, std::string message, std::string hint = {});
  Error(Exit code, Location where, std::string message, std::string hint = {});
  Error(Exit code, std::vector<Diagnostic> diagnostics);

  Exit code() const { return m_code; }
  const std::vector<Diagnostic>& diagnostics() const { return m_diagnostics; }

  // Prefixes the first diagnostic's message with context ("committing run 7: ...").
  Error& context(const std::string& what);

 private:
  Exit m_code;
  std::vector<Diagnostic> m_diagnostics;
};

// Raised when SIGINT/SIGTERM arrived; the CLI exits 130.
class Interrupted : public Error {
 public:
  explicit Interrupted(std::string what) : Error(Exit::interrupted, std::move(what)) {}
};

}  // namespace abtrack
