#pragma once
// `abtrack export`: the experiment's runs (or cells) as CSV, a markdown table or JSON. Pure.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "plan/plan.hpp"
#include "record/record.hpp"

namespace abtrack::doc {

enum class ExportFormat { csv, md, json };

// How the markdown export shows a column's numbers (CSV and JSON keep up to 10 digits).
struct ColumnFormat {
  enum class Kind {
    plain,     // as is (run numbers, n, axis values)
    measured,  // a metric's value, rounded as the document does (util::format_number)
    percent,   // a change in percent: "+12.3%"
    change,    // an absolute change, signed and rounded: "+3"
  };
  Kind kind = Kind::plain;
  std::string unit;  // the metric's unit, shown in the markdown header: "time_us (us)"
};

// A table: named columns, each value text, a number or empty (null).
struct ExportTable {
  using Value = std::variant<std::monostate, std::string, double>;
  std::vector<std::string> columns;
  std::vector<ColumnFormat> formats;  // one per column
  std::vector<std::vector<Value>> rows;
};

// One row per run (ascending): run, the cell's values, outcome, each metric's median, and for
// each compared metric (with a baseline) its Δ%, absolute Δ (only for a metric with a sample
// <= 0) and verdict ("better (exact)" for an exact change), as the run recorded them
// (record.comparison: against the baseline pool of its time, unadjusted), then the reason and
// the code it measured (record::Code::short_name: "1a2b3c4d5e6f", "... +snapshot 9f8e7d6c5b4a",
// "... +dirty"; for a revision's run, what the revision resolved to).
// With `cells`: one row per cell of the plan (plan order): the cell's values, n, outcome
// ("pending" without a run), pooled medians, the changes and verdict as the document shows
// them (Holm-adjusted), the pool's run numbers and its code (empty when pending).
ExportTable export_table(const plan::Plan& plan, const std::vector<record::Record>& records, bool cells);

// The table as text: RFC 4180 CSV (quoted where needed), a markdown table (cells escaped,
// numbers rounded as the document rounds them, units in the headers), or a JSON array of
// objects (numbers as numbers, empty as null), each ending with '\n'. CSV and JSON write
// numbers with up to 10 significant digits.
std::string format_export(const ExportTable& table, ExportFormat format);

}  // namespace abtrack::doc
