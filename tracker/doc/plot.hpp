#pragma once
// The experiment's plot: each metric with `better:` against the sweep axis, one line per
// variant, medians with their 95% CI as whiskers. Pure: this writes the SVG itself (no
// gnuplot, no I/O), so a plot costs microseconds and the same records give the same bytes.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.hpp"
#include "record/record.hpp"

namespace abtrack::doc {

// The repo-relative path of the plot: the document's path with ".svg" for its extension.
std::string plot_path(const plan::Plan& plan);

// The plot's path relative to the document's folder, percent-encoded for a markdown link.
std::string plot_link_target(const plan::Plan& plan);

// The axis the plot puts on x: `model.x` when the plan has a model, else the last axis.
std::size_t plot_x_axis(const plan::Plan& plan);

// The SVG document for the plan's records (sorted by run), or nullopt when there is nothing
// to plot (no metric with `better:`, or no passing cell measured one yet). One panel per
// metric (`<g class="panel" data-metric=...>`), one `<g class="series" data-variant=...>` per
// variant with one `<g class="point">` per measured x value. Deterministic: the same plan and
// records give the same bytes. Never throws for any plan or record text.
std::optional<std::string> plot_svg(const plan::Plan& plan, const std::vector<record::Record>& records);

// `text` as XML character data or attribute value: & < > " ' escaped, control characters
// turned into spaces, invalid UTF-8 replaced by U+FFFD, so any label gives well-formed XML.
std::string xml_escape(std::string_view text);

}  // namespace abtrack::doc
