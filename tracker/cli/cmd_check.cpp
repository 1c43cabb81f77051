// `abtrack check`: the CI gate. Every cell against its baseline cell, exactly as the document's
// results table compares them (doc::compare_cells: pooled or paired, Holm across the experiment),
// or with --history each cell's newest pool against its previous code's pool. Exit 1 when a cell
// is worse beyond min_effect, its pool failed a gate or its latest run is invalid; 4 when nothing
// was compared (the baseline has no runs).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "doc/render.hpp"
#include "experiment/check.hpp"
#include "record/compare.hpp"
#include "stats/paired.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

using record::CellRuns;
using record::Record;
using runner::Outcome;

enum class Format { text, md };

std::string pct(double v) {
  if (!std::isfinite(v)) return v > 0 ? "+∞" : "−∞";
  return fmt::format("{:+.1f}%", v);
}

// The change with its CI, as the document's results table writes it.
std::string change_text(const stats::Comparison& c) {
  if (c.exact) return stats::delta_text(c);
  if (c.absolute) {
    if (!c.delta_abs_ci.bounded()) return stats::delta_text(c) + " [CI needs more samples]";
    auto sign = [](double v) { return (v >= 0 ? "+" : "") + util::format_number(v); };
    return fmt::format("{} [{}, {}]", stats::delta_text(c), sign(c.delta_abs_ci.lo), sign(c.delta_abs_ci.hi));
  }
  if (!c.delta_ci_pct.bounded()) return pct(c.delta_pct) + " [CI needs more samples]";
  return fmt::format("{} [{:+.1f}, {:+.1f}]", pct(c.delta_pct), c.delta_ci_pct.lo, c.delta_ci_pct.hi);
}

std::string p_text(const stats::Comparison& c) {
  auto p = c.decisive_p();
  if (!p) return "n/a";
  if (*p < 1e-4) return "<0.0001";
  return util::format_number(*p);
}

std::string median_of(const CellRuns* c, const std::string& metric) {
  if (!c || !c->latest()) return "—";
  auto pooled = c->pooled_samples();
  auto s = pooled.find(metric);
  return s == pooled.end() || s->second.empty() ? "—" : util::format_number(stats::median(s->second));
}

// Display width of UTF-8 text (code points; the table's text has no wide characters).
std::size_t width(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

std::string table(const std::vector<std::vector<std::string>>& rows, std::size_t right_from, std::size_t right_to,
                  Format format) {
  std::string out;
  if (format == Format::md) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      std::vector<std::string> cells;
      for (const auto& c : rows[r]) cells.push_back(doc::escape_cell(c));
      out += "| " + fmt::format("{}", fmt::join(cells, " | ")) + " |\n";
      if (r == 0) {
        out += "|";
        for (std::size_t i = 0; i < rows[0].size(); ++i) out += i >= right_from && i < right_to ? " ---: |" : " --- |";
        out += "\n";
      }
    }
    return out;
  }
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      std::string pad(w[i] - width(row[i]), ' ');
      bool right = i >= right_from && i < right_to;
      line += (i ? "  " : "") + (right ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : ""));
    }
    out += line + "\n";
  }
  return out;
}

struct CheckArgs {
  Format format = Format::text;
  bool history = false;
  std::optional<double> min_effect;
};

CheckArgs parse_args(const Args& args) {
  CheckArgs out;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    const auto& a = args.rest[i];
    if (a == "--history") out.history = true;
    else if (auto v = take_value(args.rest, i, "--min-effect")) {
      std::string_view text = *v;
      if (text.ends_with('%')) text.remove_suffix(1);
      const auto pct = util::parse_double(text);
      if (!pct || !(*pct >= 0 && *pct < 100))
        throw Error(Exit::usage, fmt::format("--min-effect '{}' is not a percentage from 0% to below 100%", *v),
                    "abtrack check --history --min-effect 2% (changes within ±2% count as the same)");
      out.min_effect = *pct;
    } else if (auto v = take_value(args.rest, i, "--format")) {
      if (*v == "text") out.format = Format::text;
      else if (*v == "md") out.format = Format::md;
      else
        throw Error(Exit::usage, fmt::format("--format '{}' is not text or md", *v),
                    "abtrack check --format md (a pull-request comment) or --format text");
    } else unknown_argument("check", a, {"--format", "--history", "--min-effect"});
  }
  return out;
}

// The results table: a header, then a row for each cell and metric; columns right_from to
// right_to (excluded) align right.
struct Table {
  std::vector<std::vector<std::string>> rows;
  std::size_t right_from = 1, right_to = 1;
};

// "pass", "fail (latest run invalid)", "pending".
std::string outcome_text(const CellRuns& c) {
  const Record* latest = c.latest();
  if (!latest) return "pending";
  std::string outcome(runner::to_string(c.outcome()));
  if (latest->data.outcome == Outcome::invalid && c.outcome() != Outcome::invalid) outcome += " (latest run invalid)";
  return outcome;
}

// The row of metric `m` of cell `c`, compared as `cc`.
std::vector<std::string> row_of(const plan::Plan& plan, bool history, bool metric_column, const CellRuns& c,
                                const doc::CellComparison& cc, const plan::Metric& m) {
  const Record* latest = c.latest();
  std::vector<std::string> row{plan.label(c.cell)};
  if (metric_column) row.push_back(m.name);
  auto pooled = c.pooled_samples();
  auto s = pooled.find(m.name);
  row.push_back(!latest ? "" : s == pooled.end() ? "0" : std::to_string(s->second.size()));
  if (history) {
    const Record* before = cc.base ? cc.base->latest() : nullptr;
    row.push_back(before && latest ? before->code.short_name() + " → " + latest->code.short_name() : "—");
  }
  row.push_back(median_of(cc.base, m.name));
  row.push_back(latest ? median_of(&c, m.name) : "—");
  auto mc = std::find_if(cc.result.metrics.begin(), cc.result.metrics.end(),
                         [&](const record::MetricComparison& x) { return x.metric == m.name; });
  if (mc != cc.result.metrics.end()) {
    const auto& res = mc->result;
    row.push_back(change_text(res));
    std::string verdict = stats::verdict_text(res);
    if (res.analysis == "paired") verdict += " (" + stats::paired_text(res) + ")";
    row.push_back(verdict);
    row.push_back(p_text(res));
  } else {
    row.push_back("—");
    std::string why = cc.is_baseline ? "baseline" : !latest ? "pending" : cc.unavailable;
    if (why.empty()) {
      auto note = std::find_if(cc.result.notes.begin(), cc.result.notes.end(),
                               [&](const std::string& n) { return n.starts_with(m.name + ":"); });
      why = note != cc.result.notes.end() ? *note : "—";
    }
    row.push_back(why);
    row.push_back("—");
  }
  row.push_back(outcome_text(c));
  return row;
}

Table results_table(const plan::Plan& plan, bool history, const std::vector<CellRuns>& cells,
                    const std::vector<doc::CellComparison>& comps, const std::vector<const plan::Metric*>& metrics) {
  const bool metric_column = metrics.size() > 1;
  std::vector<std::string> head{"cell"};
  if (metric_column) head.push_back("metric");
  head.push_back("n");
  if (history) head.push_back("earlier code");
  head.push_back(history ? "earlier median" : "baseline median");
  head.insert(head.end(), {"median", "Δ [CI]", "verdict", "p", "outcome"});
  Table t;
  t.right_from = metric_column ? 2 : 1, t.right_to = head.size() - 3;  // n .. Δ align right
  t.rows.push_back(std::move(head));
  for (std::size_t i = 0; i < cells.size(); ++i)
    for (const auto* m : metrics) t.rows.push_back(row_of(plan, history, metric_column, cells[i], comps[i], *m));
  return t;
}

std::string title_of(const plan::Plan& plan, bool history) {
  if (history)
    return fmt::format("abtrack check --history: {}, each cell's newest code against its earlier code",
                       plan.experiment);
  if (plan.baseline) {
    std::vector<std::string> parts;
    for (const auto& [axis, value] : *plan.baseline) parts.push_back(axis + "=" + value);
    return fmt::format("abtrack check: {}, each cell against its baseline {}", plan.experiment, fmt::join(parts, " "));
  }
  return fmt::format("abtrack check: {} (no baseline: gates and invalid runs only)", plan.experiment);
}

// The last line: "check failed: worse: x=1; invalid: x=2", "check passed", ...
std::string end_line(const experiment::CheckTally& t, const std::optional<experiment::NothingCompared>& nothing) {
  std::string end = t.failing() ? "check failed" : nothing ? "check compared nothing" : "check passed";
  std::vector<std::string> why;
  if (!t.worse.empty()) why.push_back(fmt::format("worse: {}", fmt::join(t.worse, ", ")));
  if (!t.failed.empty()) why.push_back(fmt::format("failed gates: {}", fmt::join(t.failed, ", ")));
  if (!t.invalid.empty()) why.push_back(fmt::format("invalid: {}", fmt::join(t.invalid, ", ")));
  if (!why.empty()) end += fmt::format(": {}", fmt::join(why, "; "));
  if (nothing) end += ": " + nothing->what;
  return end;
}

}  // namespace

int cmd_check(const Args& args) {
  const CheckArgs a = parse_args(args);
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  plan::Plan plan = ctx.plan;
  if (a.min_effect) plan.min_effect_pct = *a.min_effect;
  auto records = experiment::head_records(ctx);
  auto cells = record::cells_with_runs(plan, records);
  std::vector<CellRuns> previous;  // --history: each cell's previous code's pool (outlives comps)
  std::size_t with_p = 0;
  std::vector<doc::CellComparison> comps;
  if (a.history) {
    for (const auto& c : cells) previous.push_back(experiment::previous_pool(c));
    comps = experiment::compare_history(plan, cells, previous, with_p);
  } else {
    comps = doc::compare_cells(plan, cells, with_p);
  }

  // The metrics a row shows: the compared ones, else the first.
  std::vector<const plan::Metric*> metrics = record::compared_metrics(plan);
  if (metrics.empty() && !plan.metrics.empty()) metrics.push_back(&plan.metrics.front());
  const Table results = results_table(plan, a.history, cells, comps, metrics);
  const auto tally = experiment::tally_check(plan, cells, comps, metrics);
  const auto nothing = experiment::nothing_compared(plan, a.history, tally, cells.size());

  const std::string title = title_of(plan, a.history);
  std::string summary = fmt::format("{} worse, {} failed gates, {} invalid", tally.worse.size(), tally.failed.size(),
                                    tally.invalid.size());
  std::string more;
  if (tally.pending)
    more += fmt::format("; {} pending (not measured yet: pending cells do not fail the check)", tally.pending);
  more += fmt::format("; verdicts beyond ±{:g}% at α = {:g}", plan.min_effect_pct, plan.alpha);
  if (with_p > 1) more += fmt::format(", Holm-adjusted over {} comparisons", with_p);
  const std::string end = end_line(tally, nothing);
  const std::string rows = table(results.rows, results.right_from, results.right_to, a.format);
  // As the document warns: comparisons across machines, or (but by design) with other code.
  auto warnings = doc::machine_warnings(comps, a.history ? "earlier code" : "baseline");
  if (!a.history && plan.revisions.empty())
    for (auto& w : doc::code_warnings(comps)) warnings.push_back(std::move(w));
  if (a.format == Format::md) {
    fmt::print("### {}\n\n", doc::escape_line(title));
    fmt::print("{}", rows);
    if (!warnings.empty()) fmt::print("\n");
    for (const auto& w : warnings) fmt::print("- ⚠ {}\n", doc::escape_line(w));
    fmt::print("\n**{}**{}. {}.\n", summary, doc::escape_line(more), doc::escape_line(end));
  } else {
    fmt::print("{}\n\n", title);
    fmt::print("{}", rows);
    if (!warnings.empty()) fmt::print("\n");
    for (const auto& w : warnings) fmt::print("⚠ {}\n", w);
    fmt::print("\n{}{}\n{}\n", summary, more, end);
  }
  if (tally.failing()) return static_cast<int>(Exit::run_failed);
  if (nothing) {
    std::fflush(stdout);
    warn(fmt::format("nothing was compared ({}): exit {}; {}", nothing->what, static_cast<int>(Exit::nothing_compared),
                     nothing->advice));
    return static_cast<int>(Exit::nothing_compared);
  }
  return 0;
}

}  // namespace abtrack::cli
