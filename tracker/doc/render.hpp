#pragma once
// Rendering the generated regions of the A/B document from the plan and the records. Pure:
// the same plan and records always give the same text (`abtrack verify` relies on it).
#include <map>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "record/record.hpp"

namespace abtrack::doc {

// The content of each region ("summary", "results", "runs"), each ending with '\n'.
// `records` must be sorted by run number.
std::map<std::string, std::string> render_regions(const plan::Plan& plan, const std::vector<record::Record>& records);

// Escapes text for a markdown table cell: '|', '\', '<', '>', '&' and line breaks can never
// break the table or open an HTML comment.
std::string escape_cell(std::string_view text);

// How many of the newest runs the runs region lists.
inline constexpr std::size_t kRunsListed = 50;

}  // namespace abtrack::doc
