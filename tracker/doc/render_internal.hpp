#pragma once
// What the renderers of the document's regions share: render.cpp (render_regions, the results
// and runs regions) and summary.cpp (the summary region). Not part of doc's interface.
#include <string>
#include <vector>

#include "doc/render.hpp"
#include "plan/plan.hpp"
#include "record/compare.hpp"
#include "record/record.hpp"
#include "stats/compare.hpp"

namespace abtrack::doc {

// "+12.3%", "+∞".
std::string pct(double v);

// A comparison as the results tables show it: the change, its interval, the verdict and p.
std::string comparison_text(const stats::Comparison& res);

// "12.5", with its distribution-free 95% CI when `with_ci` and the samples bound it:
// "12.5 [12.1, 13]"; "—" without samples.
std::string median_text(const std::vector<double>& s, bool with_ci);

// The metric whose n and median the results and runs show: the prediction's, else the first with
// `better:`, else the first.
const plan::Metric& primary_metric(const plan::Plan& plan);

// The summary region: what was measured and what it cost, the warnings (machines, code,
// identical artifacts), the evidence, the prediction, a table per compared metric over the
// variants, the step-by-step table of three or more revisions, the model's fit and the plot.
// `cells` and `comps` as render_regions has them (compare_cells).
std::string summary_region(const plan::Plan& plan, const std::vector<record::Record>& records,
                           const std::vector<record::CellRuns>& cells, const std::vector<CellComparison>& comps,
                           const RenderOptions& options);

}  // namespace abtrack::doc
