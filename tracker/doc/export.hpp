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

// A table: named columns, each value text, a number or empty (null).
struct ExportTable {
  using Value = std::variant<std::monostate, std::string, double>;
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
};

// One row per run (ascending): run, the cell's values, outcome, each metric's median, and for
// each compared metric (with a baseline) its Δ% and verdict against the baseline cell's
// current pool, then the reason. With `cells`: one row per cell of the plan (plan order): the
// cell's values, n, outcome ("pending" without a run), pooled medians, Δ% and verdict as the
// document shows them (Holm-adjusted), and the pool's run numbers.
ExportTable export_table(const plan::Plan& plan, const std::vector<record::Record>& records, bool cells);

// The table as text: RFC 4180 CSV (quoted where needed), a markdown table (cells escaped), or
// a JSON array of objects (numbers as numbers, empty as null), each ending with '\n'.
// Numbers are written with up to 10 significant digits.
std::string format_export(const ExportTable& table, ExportFormat format);

}  // namespace abtrack::doc
