#pragma once
// Helpers for the statistics tests: a portable seeded generator and the scipy oracle runner.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace abtrack::stats::testing
