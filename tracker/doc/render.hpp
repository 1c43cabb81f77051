#pragma once
// Rendering the generated regions of the A/B document from the plan and the records. Pure:
// the same plan and records always give the same text (`abtrack verify` relies on it).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "record/compare.hpp"
#include "record/record.hpp"

namespace abtrack::doc {

// What the regions show besides the records.
struct RenderOptions {
  bool plot = false;  // the plot (plot_path) is committed beside the document: link it from the summary
  // Runs of the experiment left out of `records` (see records_read_in_full): the runs region
  // counts them among the earlier runs it does not list.
  std::size_t runs_left_out = 0;
  double command_s_left_out = 0;  // the seconds their commands took (runner::Run::command_s)
};

// The content of each region ("summary", "results", "runs"), each ending with '\n'.
// `records` must be sorted by run number.
std::map<std::string, std::string> render_regions(const plan::Plan& plan, const std::vector<record::Record>& records,
                                                  const RenderOptions& options = {});

// One cell's latest state against its baseline cell, as the results table shows it.
struct CellComparison {
  const record::CellRuns* cell = nullptr;
  // The baseline cell as the cell is compared with it (record::baseline_runs), when it has a run:
  // one of `cells`, or `base_on_card` (its runs on the cell's kind of GPU).
  const record::CellRuns* base = nullptr;
  std::shared_ptr<const record::CellRuns> base_on_card;
  bool is_baseline = false;
  std::string unavailable;  // why there is no comparison ("baseline pending", ...)
  record::Comparison result;
};

// Every cell compared with its baseline cell (pooled samples), p-values Holm-adjusted across
// the experiment when there are several. `with_p` gets how many comparisons have a p-value.
// `cells` must outlive the result.
std::vector<CellComparison> compare_cells(const plan::Plan& plan, const std::vector<record::CellRuns>& cells,
                                          std::size_t& with_p);

// What to know before trusting comparisons (compare_cells', or `check --history`'s), a line per
// comparison ("v=b is compared with ..."), for the document's summary and `check`:
// - machine_warnings: the cell's and its baseline's pools (`against`: what the base is, "baseline"
//   or "earlier code") ran on different machines: hosts, drivers or the kinds of GPU they
//   measured (record::gpu_kinds: on a host of two kinds, the cells' own cards);
// - code_warnings: their latest runs ran different code (their Abtrack-Code differ), so the
//   change mixes the code's change with the variant's (by design with revisions: or --history).
std::vector<std::string> machine_warnings(const std::vector<CellComparison>& comps,
                                          const std::string& against = "baseline");
std::vector<std::string> code_warnings(const std::vector<CellComparison>& comps);

// Holm across every p-value of `comps` (each one's metrics), as compare_cells adjusts the
// experiment's: the verdicts re-decided with the adjusted p. Returns how many comparisons have a
// p-value (adjusted only when more than one).
std::size_t adjust_across_cells(std::vector<CellComparison>& comps);

// Escapes text for a markdown table cell: '|', '\', '<', '>', '&' and line breaks can never
// break the table or open an HTML comment. A code span (`decode<8>`, closed by as many
// backticks as opened it) keeps its text, which markdown shows as it is, but for '|' and line
// breaks; an unclosed backtick is a literal one.
std::string escape_cell(std::string_view text);
// The same for a line outside a table (a bullet, a sentence): a code span keeps its '|' too.
std::string escape_line(std::string_view text);

// How many of the newest runs the runs region lists.
inline constexpr std::size_t kRunsListed = 50;

// Which records of a history (`headers`, sorted by run number) render_regions and plot_svg
// read: the runs each cell pools, the runs of its baseline cell it is compared with (on its kinds
// of GPU, record::baseline_runs), likewise of the previous revision's cell in a step-by-step
// table, and the newest kRunsListed of the experiment. Rendered from only those, with
// RenderOptions::runs_left_out counting the experiment's other runs, the output is the same as
// from every record: a step reads a thousand headers and a few dozen records in full.
std::vector<bool> records_read_in_full(const plan::Plan& plan, const std::vector<record::HeaderView>& headers);

}  // namespace abtrack::doc
