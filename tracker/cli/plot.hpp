#pragma once
// Rendering the experiment's plot with gnuplot (doc/plot.hpp builds the script).
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "record/record.hpp"

namespace abtrack::cli {

// The SVG of the plot for these records, or nullopt when there is nothing to plot, when
// gnuplot is not on PATH (warned once per invocation) or when gnuplot fails (warned).
// gnuplot runs in a private temporary folder on files abtrack wrote there.
std::optional<std::string> render_plot(const plan::Plan& plan, const std::vector<record::Record>& records);

// The absolute path of `gnuplot` on PATH, or "" when there is none.
std::string find_gnuplot();

}  // namespace abtrack::cli
