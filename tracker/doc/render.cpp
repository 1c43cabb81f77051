#include "doc/render.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doc/render_internal.hpp"
#include "record/compare.hpp"
#include "runner/watch.hpp"
#include "stats/paired.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

using record::CellRuns;
using record::Record;
using runner::Outcome;
std::string pct_interval(const stats::Interval& i) {
  if (!i.bounded()) return "[CI needs more samples]";
  return fmt::format("[{:+.1f}, {:+.1f}]", i.lo, i.hi);
}

std::string signed_number(double v) { return (v >= 0 ? "+" : "") + util::format_number(v); }

std::string abs_interval(const stats::Interval& i) {
  if (!i.bounded()) return "[CI needs more samples]";
  return fmt::format("[{}, {}]", signed_number(i.lo), signed_number(i.hi));
}

std::string p_text(const std::optional<double>& p) {
  if (!p) return "p n/a";
  if (*p < 1e-4) return "p<0.0001";
  return fmt::format("p={}", util::format_number(*p));
}

std::string outcome_text(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "**fail**";
    case Outcome::invalid: return "*invalid*";
  }
  return "";
}

std::string gates_text(const Record& r) {
  if (r.data.gates.empty()) return "—";
  std::vector<std::string> failed;
  bool any_unevaluated = false;
  for (const auto& g : r.data.gates) {
    if (!g.evaluated) any_unevaluated = true;
    else if (!g.holds) failed.push_back(g.expression + " (worst " + util::format_number(*g.worst) + ")");
  }
  if (!failed.empty()) return "✗ " + fmt::format("{}", fmt::join(failed, "; "));
  if (any_unevaluated) return "not evaluated";
  return fmt::format("✓ {}/{}", r.data.gates.size(), r.data.gates.size());
}

// What warm-up dropped, for the results' note: " The first 2 samples of every invocation ...".
std::string warmup_note(const plan::Plan& plan) {
  std::set<int> counts;
  std::vector<std::string> parts, kept_whole;
  for (const auto& m : plan.metrics) {
    if (m.warmup > 0) counts.insert(m.warmup);
    if (m.warmup > 0) parts.push_back(fmt::format("{} of `{}`", m.warmup, m.name));
    else kept_whole.push_back("`" + m.name + "`");
  }
  if (counts.empty()) return {};
  const int n = *counts.begin();
  std::string what =
      counts.size() == 1
          ? fmt::format("The first {} sample{} of every invocation were dropped as warm-up (`warmup: {}`{})", n,
                        n == 1 ? "" : "s", n,
                        kept_whole.empty() ? "" : fmt::format("; none of {}", fmt::join(kept_whole, ", ")))
          : fmt::format("The first samples of every invocation were dropped as warm-up (`warmup:`): {}",
                        fmt::join(parts, ", "));
  return " " + what +
         "; n, medians and comparisons use the rest, the records keep them apart (`warmup_samples`), and "
         "gates hold for them too.";
}

// Whether the results table has a Δ column for metric `m`.
bool delta_column(const plan::Plan& plan, const std::vector<const plan::Metric*>& compared, const plan::Metric& m) {
  return plan.baseline && std::find(compared.begin(), compared.end(), &m) != compared.end();
}

// The results table's head and rule.
std::string results_head(const plan::Plan& plan, const std::vector<const plan::Metric*>& compared) {
  std::string t;
  std::vector<std::string> head;
  for (const auto& a : plan.axes) head.push_back(escape_cell(a.name));
  // The sample count column; renamed when an axis already says "n".
  bool n_taken = std::any_of(plan.axes.begin(), plan.axes.end(), [](const plan::Axis& a) { return a.name == "n"; });
  head.push_back(n_taken ? "samples" : "n");
  for (const auto& m : plan.metrics) {
    head.push_back(escape_cell(m.unit.empty() ? m.name : fmt::format("{} ({})", m.name, m.unit)));
    if (delta_column(plan, compared, m)) head.push_back(escape_cell("Δ " + m.name));
  }
  head.push_back("gates");
  head.push_back("outcome");
  head.push_back("run");
  t += "| " + fmt::format("{}", fmt::join(head, " | ")) + " |\n";
  t += "|" + [&] {
    std::string s;
    // Axes, gates and outcome read as text; the numbers align right.
    for (std::size_t i = 0; i < head.size(); ++i)
      s += (i < plan.axes.size() || i + 3 == head.size() || i + 2 == head.size()) ? " --- |" : " ---: |";
    return s;
  }() + "\n";
  return t;
}

// What the note under the results table explains when a row shows it.
struct Footnotes {
  bool exact = false, absolute = false, paired = false, throttled = false;
};

// The Δ column of metric `m` of a cell compared as `cc`.
std::string delta_cell(const CellComparison& cc, const plan::Metric& m, Footnotes& notes) {
  std::string cell;
  if (cc.is_baseline) cell = "baseline";
  else if (!cc.unavailable.empty()) cell = "— (" + cc.unavailable + ")";
  else {
    auto mc = std::find_if(cc.result.metrics.begin(), cc.result.metrics.end(),
                           [&](const record::MetricComparison& x) { return x.metric == m.name; });
    if (mc == cc.result.metrics.end()) cell = "—";
    else {
      const auto& res = mc->result;
      notes.exact = notes.exact || res.exact;
      notes.absolute = notes.absolute || res.absolute;
      notes.paired = notes.paired || res.analysis == "paired";
      cell = comparison_text(res);
    }
  }
  return cell;
}

// The results table's row of cell `c`, compared as `cc`.
std::string results_row(const plan::Plan& plan, const std::vector<const plan::Metric*>& compared,
                        const plan::Metric& primary, const CellRuns& c, const CellComparison& cc, Footnotes& notes) {
  const Record* r = c.latest();
  std::vector<std::string> row;
  for (const auto& v : c.cell.values) row.push_back(escape_cell(v));
  if (!r) {
    row.push_back("");
    for (const auto& m : plan.metrics) {
      row.push_back("");
      if (delta_column(plan, compared, m)) row.push_back("");
    }
    row.push_back("");
    row.push_back("pending");
    row.push_back("");
  } else {
    auto pooled = c.pooled_samples();
    auto ps = pooled.find(primary.name);
    row.push_back(ps == pooled.end() ? "0" : std::to_string(ps->second.size()));
    for (const auto& m : plan.metrics) {
      auto s = pooled.find(m.name);
      row.push_back(escape_cell(s == pooled.end() ? "—" : median_text(s->second, true)));
      if (!delta_column(plan, compared, m)) continue;
      row.push_back(escape_cell(delta_cell(cc, m, notes)));
    }
    row.push_back(escape_cell(gates_text(*c.deciding())));
    // The watcher's throttle reasons over the pool's runs whose samples count (runner/watch.hpp).
    std::vector<std::string> throttled;
    for (const auto* p : c.pool())
      if (p->data.outcome != Outcome::invalid)
        throttled = runner::merge_throttle(throttled, p->data.throttled.or_empty());
    notes.throttled = notes.throttled || !throttled.empty();
    row.push_back(
        outcome_text(c.outcome()) +
        (throttled.empty() ? "" : escape_cell(fmt::format(" (*throttled*: {})", fmt::join(throttled, ", ")))));
    std::vector<std::string> numbers;
    for (const auto* p : c.pool()) numbers.push_back(std::to_string(p->run));
    row.push_back(fmt::format("{}", fmt::join(numbers, ", ")));
  }
  return "| " + fmt::format("{}", fmt::join(row, " | ")) + " |\n";
}

// The note under the results table: what a row shows, and what the marks in it mean.
std::string results_note(const plan::Plan& plan, const std::vector<const plan::Metric*>& compared,
                         const plan::Metric& primary, std::size_t with_p, const Footnotes& notes) {
  std::string t;
  if (!plan.metrics.empty()) {
    t += fmt::format(
        "\nEach row pools the samples of the cell's runs on the same code (the runs listed); a run on new code "
        "starts a new pool. Medians with their distribution-free 95% CI (shown from 6 samples); n counts `{}` samples.{}",
        primary.name, warmup_note(plan));
    if (plan.baseline && !compared.empty()) {
      t += fmt::format(
          " Δ is the Hodges–Lehmann change against the baseline cell with its {:g}% CI; verdicts from a two-sided "
          "Mann–Whitney U test at α = {:g}, changes within ±{:g}% count as equivalent",
          100 * (1 - plan.alpha), plan.alpha, plan.min_effect_pct);
      if (with_p > 1) t += fmt::format("; p-values Holm–Bonferroni-adjusted over {} comparisons", with_p);
      t += ". A cell that fails a gate gets no verdict.";
      if (notes.exact)
        t +=
            " *(exact)*: every sample of each arm is the same value, so the change is exact, with no CI and no p-value "
            "(outside the Holm family); beyond ±" +
            fmt::format("{:g}", plan.min_effect_pct) + "% it is better or worse.";
      if (notes.paired)
        t +=
            " *paired ×N*: the cell and its baseline were measured in the same N rounds of one invocation (interleaved), so "
            "they are compared round by round, which cancels drift between rounds: Δ is the mean over the rounds of the "
            "difference of the arms' mean log samples. σw is the spread of the samples within an invocation, σb that of "
            "an invocation's own offset beyond what its round shares (Kalibera & Jones). *samples*: the invocations agree "
            "(the rounds vary no more than the samples predict), so every sample counts (Student's t CI from the "
            "within-invocation variance); *rounds*: they do not, so the round is the unit (Student's t on the rounds); "
            "*auto*: `rounds: auto` looked after every round, so the CI is an anytime-valid confidence sequence "
            "(docs/statistics.md).";
      if (notes.absolute)
        t += " *(abs)*: a sample is ≤ 0, so there is no ratio: the change is the absolute B − A in the metric's unit "
             "(Hodges–Lehmann on the values), its CI judged against 0.";
    }
    if (notes.throttled)
      t +=
          " *throttled*: NVML reported these clock-event reasons while the GPU was busy during a run of the pool, so its "
          "times may be slower than the GPU's; `throttle: invalid` in the plan makes such runs invalid.";
    t += "\n";
  }
  return t;
}

std::string results_region(const plan::Plan& plan, const std::vector<CellRuns>& cells,
                           const std::vector<CellComparison>& comps, std::size_t with_p) {
  const auto compared = record::compared_metrics(plan);
  const plan::Metric& primary = primary_metric(plan);
  std::string t = results_head(plan, compared);
  Footnotes notes;
  for (std::size_t i = 0; i < cells.size(); ++i) t += results_row(plan, compared, primary, cells[i], comps[i], notes);
  t += results_note(plan, compared, primary, with_p, notes);
  return t;
}

std::string runs_region(const plan::Plan& plan, const std::vector<Record>& records, const RenderOptions& options) {
  const plan::Metric& primary = primary_metric(plan);
  std::vector<const Record*> mine;
  for (const auto& r : records)
    if (r.experiment == plan.experiment) mine.push_back(&r);
  std::string runs = "| run | cell | outcome | " + escape_cell(primary.name) +
                     " median | reason | code |\n| ---: | --- | --- | ---: | --- | --- |\n";
  std::size_t shown = 0;
  for (auto it = mine.rbegin(); it != mine.rend() && shown < kRunsListed; ++it, ++shown) {
    const Record& r = **it;
    auto ps = r.data.samples.find(primary.name);
    std::string code = r.code.short_name();
    runs +=
        fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.run, escape_cell(r.label()), outcome_text(r.data.outcome),
                    escape_cell(ps == r.data.samples.end() ? "—" : median_text(ps->second, false)),
                    escape_cell(!r.data.reason.empty() ? r.data.reason
                                : !r.data.throttled    ? ""
                                                    : fmt::format("throttled: {}", fmt::join(*r.data.throttled, ", "))),
                    escape_cell(code));
  }
  if (std::size_t earlier = mine.size() - shown + options.runs_left_out; earlier > 0)
    runs += fmt::format("\n{} earlier runs: `abtrack log` or `git log` lists them.\n", earlier);
  if (mine.empty()) runs += "\n(no runs yet)\n";
  return runs;
}

}  // namespace

std::string pct(double v) {
  if (!std::isfinite(v)) return v > 0 ? "+∞" : "−∞";
  return fmt::format("{:+.1f}%", v);
}

std::string comparison_text(const stats::Comparison& res) {
  if (res.exact) return fmt::format("{} {}", stats::delta_text(res), stats::verdict_text(res));
  if (res.absolute)
    return fmt::format("{} {} {}, {}", stats::delta_text(res), abs_interval(res.delta_abs_ci), stats::verdict_text(res),
                       p_text(res.decisive_p()));
  return fmt::format("{} {} {}, {}{}", pct(res.delta_pct), pct_interval(res.delta_ci_pct), stats::verdict_text(res),
                     p_text(res.decisive_p()), res.analysis == "paired" ? ", " + stats::paired_text(res) : "");
}

const plan::Metric& primary_metric(const plan::Plan& plan) {
  if (plan.prediction)
    if (const auto* m = plan.metric(plan.prediction->metric)) return *m;
  for (const auto& m : plan.metrics)
    if (m.better != plan::Better::none) return m;
  return plan.metrics.front();
}

std::string median_text(const std::vector<double>& s, bool with_ci) {
  if (s.empty()) return "—";
  double med = stats::median(s);
  std::string out = util::format_number(med);
  if (with_ci) {
    auto ci = stats::median_ci(s, 0.95);
    if (ci.bounded()) out += fmt::format(" [{}, {}]", util::format_number(ci.lo), util::format_number(ci.hi));
  }
  return out;
}

namespace {

// Where the code span opened by the `n` backticks before `from` closes: the start of the next run
// of exactly n backticks; npos when none does (the backticks are then literal).
std::size_t code_span_end(std::string_view text, std::size_t from, std::size_t n) {
  for (std::size_t i = text.find('`', from); i != std::string_view::npos; i = text.find('`', i)) {
    std::size_t run = std::min(text.find_first_not_of('`', i), text.size()) - i;
    if (run == n) return i;
    i += run;
  }
  return std::string_view::npos;
}

// escape_cell and escape_line: `table` escapes '|' inside code spans too.
std::string escape_markdown(std::string_view raw, bool table) {
  const std::string text = util::utf8_tail(raw, raw.size());  // never invalid UTF-8 in the document
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '`') {
      // A code span shows its text as it is ("decode<8>"): only a row's breakers are escaped in it.
      const std::size_t n = std::min(text.find_first_not_of('`', i), text.size()) - i;
      const std::size_t end = code_span_end(text, i + n, n);
      if (end == std::string_view::npos) {
        out.append(n, '`');
      } else {
        for (std::size_t j = i; j < end + n; ++j) {
          if (text[j] == '|' && table) out += "\\|";
          else if (text[j] == '\n') out += ' ';
          else if (text[j] != '\r') out += text[j];
        }
      }
      i = (end == std::string_view::npos ? i + n : end + n) - 1;
      continue;
    }
    switch (c) {
      case '|': out += "\\|"; break;
      case '\\': out += "\\\\"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n': out += ' '; break;
      case '\r': break;
      default: out += c;
    }
  }
  return out;
}
}  // namespace

std::string escape_cell(std::string_view text) { return escape_markdown(text, true); }

std::string escape_line(std::string_view text) { return escape_markdown(text, false); }

std::vector<bool> records_read_in_full(const plan::Plan& plan, const std::vector<record::HeaderView>& headers) {
  std::vector<bool> full(headers.size(), false);
  record::CellLocator locator(plan);
  std::vector<std::optional<std::size_t>> cell(headers.size());
  // Each cell's latest run decides its pool: the cell's runs on the latest's code identity.
  std::vector<std::optional<std::size_t>> latest(locator.cells().size());
  for (std::size_t i = 0; i < headers.size(); ++i)
    if ((cell[i] = locator.find(headers[i]))) latest[*cell[i]] = i;
  for (std::size_t i = 0; i < headers.size(); ++i)
    if (cell[i]) full[i] = i == *latest[*cell[i]] || headers[i].same_identity(headers[*latest[*cell[i]]]);
  // A cell is compared with its baseline's runs on its own kinds of GPU (record::baseline_runs),
  // and with three or more revisions also with the previous revision's (the step-by-step table):
  // of that cell, the latest run on those kinds and the runs on that run's code there. (Nothing
  // more when that cell's latest run is on those kinds: its pool is read already.)
  const auto& all = locator.cells();
  std::vector<std::vector<std::size_t>> runs_of(all.size());
  for (std::size_t i = 0; i < headers.size(); ++i)
    if (cell[i]) runs_of[*cell[i]].push_back(i);
  auto read_against = [&](std::size_t c, std::size_t b) {
    const std::string_view kinds = headers[*latest[c]].gpus;
    if (b == all.size() || !latest[b] || headers[*latest[b]].gpus == kinds) return;
    std::optional<std::size_t> on;
    for (auto i : runs_of[b])
      if (headers[i].gpus == kinds) on = i;
    for (auto i : runs_of[b])
      if (on && headers[i].gpus == kinds && (i == *on || headers[i].same_identity(headers[*on]))) full[i] = true;
  };
  for (std::size_t c = 0; c < all.size(); ++c) {
    if (!latest[c]) continue;
    if (auto base = plan.baseline_for(all[c]); base && *base != all[c])
      read_against(c, static_cast<std::size_t>(std::find(all.begin(), all.end(), *base) - all.begin()));
    if (plan.revisions.size() >= 3)  // the cell of the revision before, the other axes alike
      for (std::size_t b = c; b-- > 0;)
        if (std::equal(all[b].values.begin() + 1, all[b].values.end(), all[c].values.begin() + 1)) {
          read_against(c, b);
          break;
        }
  }
  std::size_t listed = 0;
  for (std::size_t i = headers.size(); i-- > 0 && listed < kRunsListed;)
    if (headers[i].experiment == plan.experiment) {
      full[i] = true;
      ++listed;
    }
  return full;
}

std::vector<CellComparison> compare_cells(const plan::Plan& plan, const std::vector<CellRuns>& cells,
                                          std::size_t& with_p) {
  // Comparisons, then Holm across every p-value of the experiment.
  std::vector<CellComparison> comps(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    auto& cc = comps[i];
    cc.cell = &cells[i];
    auto base_cell = plan.baseline_for(cells[i].cell);
    const Record* latest = cells[i].latest();
    if (!base_cell) {
      cc.unavailable = plan.baseline ? "no baseline cell" : "";
      continue;
    }
    if (*base_cell == cells[i].cell) {
      cc.is_baseline = true;
      continue;
    }
    auto found = std::find_if(cells.begin(), cells.end(), [&](const CellRuns& c) { return c.cell == *base_cell; });
    const CellRuns* b = found == cells.end() ? nullptr : &*found;
    if (b && latest) {
      if (auto on = record::baseline_runs(*b, cells[i]); on.runs.size() != b->runs.size())
        b = (cc.base_on_card = std::make_shared<const CellRuns>(std::move(on))).get();
    }
    const Record* base = b ? b->latest() : nullptr;
    if (base) cc.base = b;
    if (!latest) continue;
    if (cells[i].outcome() != Outcome::pass)
      cc.unavailable = cells[i].outcome() == Outcome::fail ? "no verdict: a gate failed" : "no verdict: invalid run";
    else if (!base) cc.unavailable = "baseline pending";
    else if (b->outcome() != Outcome::pass)
      cc.unavailable = "no verdict: baseline " + std::string(runner::to_string(b->outcome()));
    else {
      cc.result = record::compare_pools(plan, *b, cells[i]);
    }
  }
  with_p = adjust_across_cells(comps);
  return comps;
}

std::size_t adjust_across_cells(std::vector<CellComparison>& comps) {
  std::vector<stats::Comparison*> family;
  for (auto& cc : comps)
    for (auto& m : cc.result.metrics) family.push_back(&m.result);
  std::vector<stats::Comparison> flat;
  for (auto* c : family) flat.push_back(*c);
  std::size_t with_p =
      std::count_if(flat.begin(), flat.end(), [](const stats::Comparison& c) { return c.p_value.has_value(); });
  if (with_p > 1) {
    stats::adjust_family(flat);
    for (std::size_t i = 0; i < family.size(); ++i) *family[i] = flat[i];
  }
  return with_p;
}

std::map<std::string, std::string> render_regions(const plan::Plan& plan, const std::vector<Record>& records,
                                                  const RenderOptions& options) {
  auto cells = record::cells_with_runs(plan, records);
  std::size_t with_p = 0;
  auto comps = compare_cells(plan, cells, with_p);
  std::map<std::string, std::string> out;
  out["results"] = results_region(plan, cells, comps, with_p);
  out["summary"] = summary_region(plan, records, cells, comps, options);
  out["runs"] = runs_region(plan, records, options);
  return out;
}

}  // namespace abtrack::doc
