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

// The previous code's pool of a cell: the runs on the code identity of its newest run that is not
// on the latest run's code (the most recent earlier code), as a CellRuns whose pool() is exactly
// those runs. No runs when the cell has no earlier code.
CellRuns previous_pool(const CellRuns& c) {
  CellRuns out{c.cell, {}};
  auto newest = c.pool();
  auto in_newest = [&](const Record* r) { return std::find(newest.begin(), newest.end(), r) != newest.end(); };
  const Record* prev = nullptr;
  for (auto it = c.runs.rbegin(); it != c.runs.rend() && !prev; ++it)
    if (!in_newest(*it)) prev = *it;
  if (!prev) return out;
  for (const auto* r : c.runs)
    if (!in_newest(r) && (r == prev || r->code.same_identity(prev->code))) out.runs.push_back(r);
  return out;
}

// Each cell against its previous code, p-values Holm-adjusted across the cells compared.
std::vector<doc::CellComparison> compare_history(const plan::Plan& plan, const std::vector<CellRuns>& cells,
                                                 const std::vector<CellRuns>& previous, std::size_t& with_p) {
  std::vector<doc::CellComparison> comps(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    auto& cc = comps[i];
    cc.cell = &cells[i];
    if (!cells[i].latest()) continue;
    if (!previous[i].latest()) {
      cc.unavailable = "no earlier code";
      continue;
    }
    cc.base = &previous[i];
    if (cells[i].outcome() != Outcome::pass)
      cc.unavailable = cells[i].outcome() == Outcome::fail ? "no verdict: a gate failed" : "no verdict: invalid run";
    else if (previous[i].outcome() != Outcome::pass)
      cc.unavailable = "no verdict: earlier code " + std::string(runner::to_string(previous[i].outcome()));
    else
      // Pools of two codes of one cell are never measured in the same rounds: pooled samples.
      cc.result = record::compare_with_baseline(plan, previous[i], cells[i].pooled_samples());
  }
  with_p = doc::adjust_across_cells(comps);
  return comps;
}

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

}  // namespace

int cmd_check(const Args& args) {
  Format format = Format::text;
  bool history = false;
  std::optional<double> min_effect;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    const auto& a = args.rest[i];
    if (a == "--history") history = true;
    else if (auto v = take_value(args.rest, i, "--min-effect")) {
      std::string_view text = *v;
      if (text.ends_with('%')) text.remove_suffix(1);
      const auto pct = util::parse_double(text);
      if (!pct || !(*pct >= 0 && *pct < 100))
        throw Error(Exit::usage, fmt::format("--min-effect '{}' is not a percentage from 0% to below 100%", *v),
                    "abtrack check --history --min-effect 2% (changes within ±2% count as the same)");
      min_effect = *pct;
    } else if (auto v = take_value(args.rest, i, "--format")) {
      if (*v == "text") format = Format::text;
      else if (*v == "md") format = Format::md;
      else
        throw Error(Exit::usage, fmt::format("--format '{}' is not text or md", *v),
                    "abtrack check --format md (a pull-request comment) or --format text");
    } else unknown_argument("check", a, {"--format", "--history", "--min-effect"});
  }
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  plan::Plan plan = ctx.plan;
  if (min_effect) plan.min_effect_pct = *min_effect;
  auto records = experiment::head_records(ctx);
  auto cells = record::cells_with_runs(plan, records);
  std::vector<CellRuns> previous;  // --history: each cell's previous code's pool (outlives comps)
  std::size_t with_p = 0;
  std::vector<doc::CellComparison> comps;
  if (history) {
    for (const auto& c : cells) previous.push_back(previous_pool(c));
    comps = compare_history(plan, cells, previous, with_p);
  } else {
    comps = doc::compare_cells(plan, cells, with_p);
  }

  // The metrics a row shows: the compared ones, else the first.
  std::vector<const plan::Metric*> metrics = record::compared_metrics(plan);
  if (metrics.empty() && !plan.metrics.empty()) metrics.push_back(&plan.metrics.front());
  const bool metric_column = metrics.size() > 1;

  std::vector<std::string> head{"cell"};
  if (metric_column) head.push_back("metric");
  head.push_back("n");
  if (history) head.push_back("earlier code");
  head.push_back(history ? "earlier median" : "baseline median");
  head.insert(head.end(), {"median", "Δ [CI]", "verdict", "p", "outcome"});
  const std::size_t right_from = metric_column ? 2 : 1, right_to = head.size() - 3;  // n .. Δ align right
  std::vector<std::vector<std::string>> rows{head};

  std::size_t worse = 0, failed = 0, invalid = 0, pending = 0, compared = 0;
  std::vector<std::string> worse_cells, failed_cells, invalid_cells, pending_baselines;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    const auto& cc = comps[i];
    const Record* latest = c.latest();
    std::string label = plan.label(c.cell);
    std::string outcome = "pending";
    if (!latest) {
      ++pending;
      if (cc.is_baseline) pending_baselines.push_back(label);
    } else {
      outcome = runner::to_string(c.outcome());
      if (c.outcome() == Outcome::fail) {
        ++failed;
        failed_cells.push_back(label);
      }
      if (latest->data.outcome == Outcome::invalid) {
        ++invalid;
        invalid_cells.push_back(label);
        if (c.outcome() != Outcome::invalid) outcome += " (latest run invalid)";
      }
    }
    bool is_worse = false;
    if (!cc.result.metrics.empty()) ++compared;
    for (const auto* m : metrics) {
      std::vector<std::string> row{label};
      if (metric_column) row.push_back(m->name);
      auto pooled = c.pooled_samples();
      auto s = pooled.find(m->name);
      row.push_back(!latest ? "" : s == pooled.end() ? "0" : std::to_string(s->second.size()));
      if (history) {
        const Record* before = cc.base ? cc.base->latest() : nullptr;
        row.push_back(before && latest ? before->code.short_name() + " → " + latest->code.short_name() : "—");
      }
      row.push_back(median_of(cc.base, m->name));
      row.push_back(latest ? median_of(&c, m->name) : "—");
      auto mc = std::find_if(cc.result.metrics.begin(), cc.result.metrics.end(),
                             [&](const record::MetricComparison& x) { return x.metric == m->name; });
      if (mc != cc.result.metrics.end()) {
        const auto& res = mc->result;
        row.push_back(change_text(res));
        std::string verdict = stats::verdict_text(res);
        if (res.analysis == "paired") verdict += " (" + stats::paired_text(res) + ")";
        row.push_back(verdict);
        row.push_back(p_text(res));
        if (res.verdict == stats::Verdict::worse) is_worse = true;
      } else {
        row.push_back("—");
        std::string why = cc.is_baseline ? "baseline" : !latest ? "pending" : cc.unavailable;
        if (why.empty()) {
          auto note = std::find_if(cc.result.notes.begin(), cc.result.notes.end(),
                                   [&](const std::string& n) { return n.starts_with(m->name + ":"); });
          why = note != cc.result.notes.end() ? *note : "—";
        }
        row.push_back(why);
        row.push_back("—");
      }
      row.push_back(outcome);
      rows.push_back(std::move(row));
    }
    if (is_worse) {
      ++worse;
      worse_cells.push_back(label);
    }
  }

  std::string title;
  if (history)
    title =
        fmt::format("abtrack check --history: {}, each cell's newest code against its earlier code", plan.experiment);
  else if (plan.baseline) {
    std::vector<std::string> parts;
    for (const auto& [axis, value] : *plan.baseline) parts.push_back(axis + "=" + value);
    title = fmt::format("abtrack check: {}, each cell against its baseline {}", plan.experiment, fmt::join(parts, " "));
  } else title = fmt::format("abtrack check: {} (no baseline: gates and invalid runs only)", plan.experiment);

  std::string summary = fmt::format("{} worse, {} failed gates, {} invalid", worse, failed, invalid);
  std::string more;
  if (pending) more += fmt::format("; {} pending (not measured yet: pending cells do not fail the check)", pending);
  more += fmt::format("; verdicts beyond ±{:g}% at α = {:g}", plan.min_effect_pct, plan.alpha);
  if (with_p > 1) more += fmt::format(", Holm-adjusted over {} comparisons", with_p);
  const bool failing = worse + failed + invalid > 0;
  // A gate that compared nothing checked nothing: it must not read as a pass (a CI job whose
  // baseline was never measured). Without comparisons to make (no baseline, or no metric with
  // `better:`), it checks the gates and invalid runs of what was measured: nothing when no cell was.
  const bool compares = (history || plan.baseline) && !record::compared_metrics(plan).empty();
  std::string nothing, advice = "measure them first: abtrack run";
  if (!failing && (compares ? compared == 0 : pending == cells.size())) {
    if (pending == cells.size()) nothing = "no cell has a run";
    else if (history) {
      nothing = "no cell has runs on earlier code";
      advice = "--history compares a cell's newest code with the code it ran on before";
    } else if (!pending_baselines.empty())
      nothing = fmt::format("the baseline {} no runs",
                            pending_baselines.size() == 1 ? pending_baselines.front() + " has"
                                                          : fmt::format("{} have", fmt::join(pending_baselines, ", ")));
    else {
      nothing = "no cell but the baseline has a run to compare";
      advice = "measure the cells that differ from the baseline: abtrack run";
    }
  }
  std::string end = failing ? "check failed" : !nothing.empty() ? "check compared nothing" : "check passed";
  std::vector<std::string> why;
  if (!worse_cells.empty()) why.push_back(fmt::format("worse: {}", fmt::join(worse_cells, ", ")));
  if (!failed_cells.empty()) why.push_back(fmt::format("failed gates: {}", fmt::join(failed_cells, ", ")));
  if (!invalid_cells.empty()) why.push_back(fmt::format("invalid: {}", fmt::join(invalid_cells, ", ")));
  if (!why.empty()) end += fmt::format(": {}", fmt::join(why, "; "));
  if (!nothing.empty()) end += ": " + nothing;

  if (format == Format::md) {
    fmt::print("### {}\n\n", doc::escape_cell(title));
    fmt::print("{}", table(rows, right_from, right_to, format));
    fmt::print("\n**{}**{}. {}.\n", summary, doc::escape_cell(more), doc::escape_cell(end));
  } else {
    fmt::print("{}\n\n", title);
    fmt::print("{}", table(rows, right_from, right_to, format));
    fmt::print("\n{}{}\n{}\n", summary, more, end);
  }
  if (failing) return static_cast<int>(Exit::run_failed);
  if (!nothing.empty()) {
    std::fflush(stdout);
    warn(fmt::format("nothing was compared ({}): exit {}; {}", nothing, static_cast<int>(Exit::nothing_compared),
                     advice));
    return static_cast<int>(Exit::nothing_compared);
  }
  return 0;
}

}  // namespace abtrack::cli
