#include "cli/plot.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "cli/context.hpp"
#include "doc/plot.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"

namespace abtrack::cli {
namespace fs = std::filesystem;
namespace {

// A private folder removed when it goes out of scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/abtrack-plot.XXXXXX";
    if (::mkdtemp(tmpl.data())) m_path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!m_path.empty()) fs::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }

 private:
  fs::path m_path;
};

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  for (const auto& dir : util::split(path, ':')) {
    if (dir.empty()) continue;  // the current directory is not a place to find tools in
    fs::path p = fs::path(dir) / "gnuplot";
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

std::optional<std::string> render_plot(const plan::Plan& plan, const std::vector<record::Record>& records) {
  if (!plan.plot) return std::nullopt;
  auto files = doc::plot_files(plan, records);
  if (!files) return std::nullopt;
  static bool warned = false;
  std::string gnuplot = find_gnuplot();
  if (gnuplot.empty()) {
    if (!warned)
      warn(fmt::format("gnuplot is not on PATH: {} is not updated (install gnuplot-nox to get the plot)", doc::plot_path(plan)));
    warned = true;
    return std::nullopt;
  }
  TempDir dir;
  if (dir.path().empty()) {
    warn("cannot create a temporary folder for the plot; the plot is not updated");
    return std::nullopt;
  }
  try {
    util::write_file_atomic(dir.path() / std::string(doc::kPlotScript), files->script, util::Durability::ordinary);
    for (const auto& [name, data] : files->data) util::write_file_atomic(dir.path() / name, data, util::Durability::ordinary);
    util::ProcessSpec spec;
    // Only abtrack's own fixed names reach the shell; the plan's text is inside the script file.
    spec.shell_command = util::shell_quote(gnuplot) + " " + std::string(doc::kPlotScript);
    spec.workdir = dir.path();
    spec.timeout_s = 60;
    spec.env = {{"LC_ALL", "C"}};
    auto result = util::run_process(spec);
    util::trace("plot rendered");
    fs::path svg = dir.path() / std::string(doc::kPlotOutput);
    std::error_code ec;
    if (!result.succeeded() || !fs::exists(svg, ec)) {
      warn(fmt::format("gnuplot failed ({}); {} is not updated: {}",
                       result.exit_code ? fmt::format("exit {}", *result.exit_code) : std::string("killed"),
                       doc::plot_path(plan), util::trim(util::utf8_tail(result.err, 400))));
      return std::nullopt;
    }
    return util::read_file(svg);
  } catch (const Error& e) {
    warn("the plot is not updated: " + e.diagnostics().front().message);
    return std::nullopt;
  }
}

}  // namespace abtrack::cli
