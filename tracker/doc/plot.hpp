#pragma once
// The experiment's plot: each metric with `better:` against the sweep axis, one line per
// variant, medians with their 95% CI. Pure: this builds the gnuplot script and its data files;
// running gnuplot is the CLI's business (cli/plot.hpp).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "record/record.hpp"

namespace abtrack::doc {

// A gnuplot script and the data files it reads, all named by fixed ASCII names (no name or
// value from the plan ever becomes a file name or unquoted script text).
struct PlotFiles {
  std::string script;                                      // writes kPlotOutput in its folder
  std::vector<std::pair<std::string, std::string>> data;   // file name -> tab-separated numbers
};

inline constexpr std::string_view kPlotScript = "plot.gp";
inline constexpr std::string_view kPlotOutput = "plot.svg";

// The repo-relative path of the plot: the document's path with ".svg" for its extension.
std::string plot_path(const plan::Plan& plan);

// The plot's path relative to the document's folder, percent-encoded for a markdown link.
std::string plot_link_target(const plan::Plan& plan);

// The axis the plot puts on x: `model.x` when the plan has a model, else the last axis.
std::size_t plot_x_axis(const plan::Plan& plan);

// The script and data for the plan's records (sorted by run), or nullopt when there is
// nothing to plot (no metric with `better:`, or no passing cell measured one yet).
// Deterministic: the same plan and records give the same bytes.
std::optional<PlotFiles> plot_files(const plan::Plan& plan, const std::vector<record::Record>& records);

// `text` as a single-quoted gnuplot string: quotes doubled, line breaks turned into spaces.
std::string gnuplot_quote(std::string_view text);

}  // namespace abtrack::doc
