#pragma once
// Helpers for the statistics tests: a portable seeded generator and the scipy oracle runner.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

namespace abtrack::stats::testing {

// SplitMix64 with Box-Muller: the same numbers on every platform and standard library
// (std::normal_distribution is implementation-defined).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : m_state(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1).
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform integer in [lo, hi].
  int between(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
  double normal() {
    if (m_spare) {
      const double s = *m_spare;
      m_spare.reset();
      return s;
    }
    const double r = std::sqrt(-2 * std::log(uniform()));
    const double t = 2 * std::numbers::pi * uniform();
    m_spare = r * std::sin(t);
    return r * std::cos(t);
  }
  // n samples of scale * (1 + noise * Z): a benchmark time with relative noise.
  std::vector<double> times(std::size_t n, double scale, double noise) {
    std::vector<double> v(n);
    for (double& x : v) x = scale * (1 + noise * normal());
    return v;
  }

 private:
  std::uint64_t m_state;
  std::optional<double> m_spare;
};

// A python3 that can import scipy: $ABTRACK_PYTHON, then /usr/bin/python3 (Debian's, where
// python3-scipy installs), then python3 on PATH. Empty when there is none.
inline std::string find_scipy_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("ABTRACK_PYTHON"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back("/usr/bin/python3");
  candidates.emplace_back("python3");
  for (const std::string& py : candidates) {
    const std::string cmd = "'" + py + "' -c 'import scipy.stats, numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return {};
}

// Runs tests/unit/oracle/<script_name> (stats_oracle.py) on `cases` (one case per line) and returns one row of
// numbers per case; empty when python3 with scipy is missing or the script fails.
inline std::optional<std::vector<std::vector<double>>> run_oracle(const std::string& python, const std::string& cases,
                                                                  const std::string& script_name = "stats_oracle.py") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("abtrack-stats-oracle-" + std::to_string(static_cast<unsigned long long>(::getpid())));
  fs::create_directories(dir);
  const fs::path in = dir / "cases.txt", out = dir / "answers.txt";
  std::ofstream(in) << cases;
  const std::string script = std::string(ABTRACK_SOURCE_DIR) + "/tests/unit/oracle/" + script_name;
  const std::string cmd = "'" + python + "' '" + script + "' '" + in.string() + "' > '" + out.string() + "'";
  const int rc = std::system(cmd.c_str());
  std::vector<std::vector<double>> rows;
  std::ifstream answers(out);
  for (std::string line; std::getline(answers, line);) {
    std::istringstream ls(line);
    std::vector<double> row;
    for (std::string tok; ls >> tok;) row.push_back(std::strtod(tok.c_str(), nullptr));
    rows.push_back(std::move(row));
  }
  fs::remove_all(dir);
  if (rc != 0) return std::nullopt;
  return rows;
}

using Row = std::vector<double>;

// |got - want| <= rel * max(|got|, |want|), also for tiny p-values; infinities must match.
inline bool close(double got, double want, double rel) {
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= rel * std::max(std::fabs(got), std::fabs(want)) + 1e-300;
}

// "n x1 x2 ...": a sample as an oracle script reads it.
inline std::string list(const std::vector<double>& v) {
  std::string s = std::to_string(v.size());
  for (double x : v) s += fmt::format(" {}", x);
  return s;
}

// Cases for an oracle script, one line each, and the check of each answer row.
struct Oracle {
  std::string cases;
  std::vector<std::function<void(const Row&)>> checks;
  std::vector<std::string> names;

  void add(std::string name, std::string line, std::function<void(const Row&)> check) {
    cases += line + "\n";
    checks.push_back(std::move(check));
    names.push_back(std::move(name));
  }
};

// Runs tests/unit/oracle/<script> on o's cases and checks every answer. Without python3 + scipy
// the comparison is skipped with a message, except under CI=true, where it is a failure.
inline void check_with_scipy(const Oracle& o, const std::string& script, const std::string& what) {
  const std::string python = find_scipy_python();
  const char* ci = std::getenv("CI");
  if (python.empty()) {
    if (ci && std::string(ci) == "true") FAIL("CI=true but no python3 with scipy: install python3-scipy");
    MESSAGE("skipped: no python3 with scipy (install python3-scipy, or set ABTRACK_PYTHON)");
    return;
  }
  const auto rows = run_oracle(python, o.cases, script);
  const std::string failed = "tests/unit/oracle/" + script + " failed";
  REQUIRE_MESSAGE(rows, failed);
  REQUIRE(rows->size() == o.checks.size());
  for (std::size_t i = 0; i < o.checks.size(); ++i) {
    CAPTURE(o.names[i]);
    o.checks[i]((*rows)[i]);
  }
  MESSAGE(fmt::format("compared {} cases with {}", o.checks.size(), what));
}

}  // namespace abtrack::stats::testing
