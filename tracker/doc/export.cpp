#include "doc/export.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "doc/render.hpp"
#include "record/compare.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

using Value = ExportTable::Value;

bool is_compared(const std::vector<const plan::Metric*>& compared, const plan::Metric& m) {
  return std::find(compared.begin(), compared.end(), &m) != compared.end();
}

Value median_value(const std::map<std::string, std::vector<double>>& samples, const std::string& name) {
  auto it = samples.find(name);
  if (it == samples.end() || it->second.empty()) return {};
  return stats::median(it->second);
}

Value finite(double v) { return std::isfinite(v) ? Value(v) : Value(); }

// An axis value as the record has it (util::plain_integer: a number; else text).
Value axis_value(const std::string& s) {
  auto n = util::plain_integer(s);
  return n ? Value(static_cast<double>(*n)) : Value(s);
}

std::string text_of(const Value& v) {
  if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  if (std::holds_alternative<double>(v)) return fmt::format("{:.10g}", std::get<double>(v));
  return {};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Δ%, absolute Δ and verdict columns of one compared metric from a comparison (or a note).
void add_delta(std::vector<Value>& row, const record::Comparison* c, const std::string& metric,
               const std::string& note) {
  if (c) {
    for (const auto& m : c->metrics) {
      if (m.metric != metric) continue;
      const auto& r = m.result;
      row.push_back(r.absolute ? Value() : finite(r.delta_pct));
      row.push_back(r.absolute ? finite(r.delta_abs) : Value());
      row.push_back(r.exact ? std::string(stats::to_string(r.verdict)) + " (exact)"
                            : std::string(stats::to_string(r.verdict)));
      return;
    }
    // The comparison names why this metric was left out ("t: no samples on this side").
    for (const auto& n : c->notes)
      if (n.starts_with(metric + ": ")) {
        row.push_back({});
        row.push_back({});
        row.push_back(n.substr(metric.size() + 2));
        return;
      }
  }
  row.push_back({});
  row.push_back({});
  row.push_back(note.empty() ? Value() : Value(note));
}

std::string md_number(double v, const ColumnFormat& f) {
  switch (f.kind) {
    case ColumnFormat::Kind::plain: return fmt::format("{:.10g}", v);
    case ColumnFormat::Kind::measured: return util::format_number(v);
    case ColumnFormat::Kind::percent: return fmt::format("{:+.1f}%", v);
    case ColumnFormat::Kind::change: return (v >= 0 ? "+" : "") + util::format_number(v);
  }
  return {};
}

}  // namespace

ExportTable export_table(const plan::Plan& plan, const std::vector<record::Record>& records, bool per_cell) {
  ExportTable t;
  auto compared = record::compared_metrics(plan);
  const bool deltas = plan.baseline.has_value();
  // An axis or metric named like one of the table's own columns (an axis `n` or `run`) gets its
  // kind after its name, so no column hides another (JSON rows are keyed by column).
  const std::vector<std::string> own = {per_cell ? "n" : "run", "outcome", per_cell ? "runs" : "reason", "code"};
  auto named = [&](const std::string& name, const char* kind) {
    const bool taken = std::find(own.begin(), own.end(), name) != own.end() ||
                       std::find(t.columns.begin(), t.columns.end(), name) != t.columns.end();
    return taken ? fmt::format("{} ({})", name, kind) : name;
  };
  auto column = [&](std::string name, ColumnFormat::Kind kind = ColumnFormat::Kind::plain, std::string unit = "") {
    t.columns.push_back(std::move(name));
    t.formats.push_back(ColumnFormat{kind, std::move(unit)});
  };
  if (!per_cell) column("run");
  for (const auto& a : plan.axes) column(named(a.name, "axis"));
  if (per_cell) column("n");
  column("outcome");
  for (const auto& m : plan.metrics) column(named(m.name, "metric"), ColumnFormat::Kind::measured, m.unit);
  if (deltas)
    for (const auto& m : plan.metrics)
      if (is_compared(compared, m)) {
        column(m.name + " delta_pct", ColumnFormat::Kind::percent);
        column(m.name + " delta_abs", ColumnFormat::Kind::change, m.unit);
        column(m.name + " verdict");
      }
  column(per_cell ? "runs" : "reason");
  column("code");

  auto cells = record::cells_with_runs(plan, records);
  if (per_cell) {
    std::size_t with_p = 0;
    auto comps = compare_cells(plan, cells, with_p);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const auto& c = cells[i];
      std::vector<Value> row;
      for (const auto& v : c.cell.values) row.push_back(axis_value(v));
      auto pooled = c.latest() ? c.pooled_samples() : std::map<std::string, std::vector<double>>{};
      std::size_t n = 0;
      for (const auto& [name, s] : pooled) n = std::max(n, s.size());
      row.push_back(c.latest() ? Value(static_cast<double>(n)) : Value());
      row.push_back(c.latest() ? std::string(runner::to_string(c.outcome())) : std::string("pending"));
      for (const auto& m : plan.metrics) row.push_back(median_value(pooled, m.name));
      if (deltas)
        for (const auto& m : plan.metrics) {
          if (!is_compared(compared, m)) continue;
          const auto& cc = comps[i];
          std::string note = cc.is_baseline ? "baseline" : cc.unavailable;
          bool has = !cc.is_baseline && cc.unavailable.empty() && c.latest() && cc.base;
          add_delta(row, has ? &cc.result : nullptr, m.name, note);
        }
      std::string runs;
      for (const auto* r : c.pool()) runs += (runs.empty() ? "" : " ") + std::to_string(r->run);
      row.push_back(runs);
      row.push_back(c.latest() ? Value(c.latest()->code.short_name()) : Value());
      t.rows.push_back(std::move(row));
    }
    return t;
  }
  for (const auto& r : records) {
    if (r.experiment != plan.experiment) continue;
    std::vector<Value> row;
    row.push_back(static_cast<double>(r.run));
    auto cell = record::plan_cell(plan, r.cell);
    for (const auto& a : plan.axes) {
      auto it = std::find_if(r.cell.begin(), r.cell.end(), [&](const auto& kv) { return kv.first == a.name; });
      row.push_back(it == r.cell.end() ? Value() : axis_value(it->second));
    }
    row.push_back(std::string(runner::to_string(r.data.outcome)));
    for (const auto& m : plan.metrics) row.push_back(median_value(r.data.samples, m.name));
    if (deltas) {
      // The run's own comparison, as its result line and commit said: against the baseline's
      // pool when it ran, not today's (a later baseline run must not rewrite this row).
      const record::Comparison* comparison = nullptr;
      std::string note;
      auto base_cell = cell ? plan.baseline_for(*cell) : std::nullopt;
      if (!base_cell) note = "no baseline cell";
      else if (*base_cell == *cell) note = "baseline";
      else if (r.data.outcome != runner::Outcome::pass) note = "no verdict";
      else if (r.comparison) comparison = &*r.comparison;
      else note = "no comparison: the baseline was pending or not passing";
      for (const auto& m : plan.metrics)
        if (is_compared(compared, m)) add_delta(row, comparison, m.name, note);
    }
    row.push_back(r.data.reason);
    row.push_back(r.code.short_name());
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string format_export(const ExportTable& t, ExportFormat format) {
  std::string out;
  switch (format) {
    case ExportFormat::csv: {
      auto line = [&](const std::vector<std::string>& fields) {
        for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
        out += "\r\n";
      };
      line(t.columns);
      for (const auto& row : t.rows) {
        std::vector<std::string> f;
        for (const auto& v : row) f.push_back(text_of(v));
        line(f);
      }
      return out;
    }
    case ExportFormat::md: {
      auto format_of = [&](std::size_t i) { return i < t.formats.size() ? t.formats[i] : ColumnFormat{}; };
      std::vector<std::string> head;
      for (std::size_t i = 0; i < t.columns.size(); ++i) {
        const std::string& unit = format_of(i).unit;
        head.push_back(escape_cell(unit.empty() ? t.columns[i] : fmt::format("{} ({})", t.columns[i], unit)));
      }
      out += "| " + fmt::format("{}", fmt::join(head, " | ")) + " |\n|";
      // Numbers align right, as in the document.
      for (std::size_t i = 0; i < t.columns.size(); ++i)
        out += format_of(i).kind == ColumnFormat::Kind::plain ? " --- |" : " ---: |";
      out += "\n";
      for (const auto& row : t.rows) {
        std::vector<std::string> f;
        for (std::size_t i = 0; i < row.size(); ++i) {
          const auto& v = row[i];
          f.push_back(escape_cell(std::holds_alternative<double>(v) ? md_number(std::get<double>(v), format_of(i))
                                                                    : text_of(v)));
        }
        out += "| " + fmt::format("{}", fmt::join(f, " | ")) + " |\n";
      }
      return out;
    }
    case ExportFormat::json: {
      auto arr = nlohmann::ordered_json::array();
      for (const auto& row : t.rows) {
        nlohmann::ordered_json o = nlohmann::ordered_json::object();
        for (std::size_t i = 0; i < t.columns.size() && i < row.size(); ++i) {
          const auto& v = row[i];
          if (std::holds_alternative<std::string>(v)) o[t.columns[i]] = std::get<std::string>(v);
          else if (std::holds_alternative<double>(v)) {
            double d = std::get<double>(v);
            if (d == std::floor(d) && std::fabs(d) < 1e15) o[t.columns[i]] = static_cast<long long>(d);
            else o[t.columns[i]] = d;
          } else o[t.columns[i]] = nullptr;
        }
        arr.push_back(std::move(o));
      }
      return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
  }
  return out;
}

}  // namespace abtrack::doc
