#include "doc/render.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doc/evidence.hpp"
#include "doc/plot.hpp"
#include "record/compare.hpp"
#include "stats/linear_fit.hpp"
#include "stats/paired.hpp"
#include "stats/prediction.hpp"
#include "stats/quantile.hpp"
#include "stats/sweep.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

using record::CellRuns;
using record::Record;
using runner::Outcome;

std::string pct(double v) {
  if (!std::isfinite(v)) return v > 0 ? "+∞" : "−∞";
  return fmt::format("{:+.1f}%", v);
}

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

// A comparison as the results tables show it: the change, its interval, the verdict and p.
std::string comparison_text(const stats::Comparison& res) {
  if (res.exact) return fmt::format("{} {}", stats::delta_text(res), stats::verdict_text(res));
  if (res.absolute)
    return fmt::format("{} {} {}, {}", stats::delta_text(res), abs_interval(res.delta_abs_ci), stats::verdict_text(res),
                       p_text(res.decisive_p()));
  return fmt::format("{} {} {}, {}{}", pct(res.delta_pct), pct_interval(res.delta_ci_pct), stats::verdict_text(res),
                     p_text(res.decisive_p()), res.analysis == "paired" ? ", " + stats::paired_text(res) : "");
}

std::string outcome_text(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "**fail**";
    case Outcome::invalid: return "*invalid*";
  }
  return "";
}

// The metric whose n and median the runs list shows: the prediction's, else the first with
// `better:`, else the first.
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

// "| variant | fit | R² |" rows: metric = fixed + marginal * x per variant (the other axes).
std::string model_table(const plan::Plan& plan, const std::vector<CellRuns>& cells) {
  const auto& model = *plan.model;
  const plan::Metric* metric = plan.metric(model.metric);
  std::size_t xi = 0;
  while (plan.axes[xi].name != model.axis) ++xi;
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> points;  // variant -> (x, y)
  for (const auto& c : cells) {
    std::vector<std::string> parts;
    for (std::size_t a = 0; a < plan.axes.size(); ++a)
      if (a != xi) parts.push_back(plan.axes[a].name + "=" + c.cell.values[a]);
    std::string name = parts.empty() ? "(all)" : fmt::format("{}", fmt::join(parts, " "));
    if (!points.count(name)) order.push_back(name);
    auto& [xs, ys] = points[name];
    if (!c.latest() || c.outcome() != Outcome::pass) continue;
    auto pooled = c.pooled_samples();
    auto it = pooled.find(model.metric);
    if (it == pooled.end()) continue;
    double x = *util::parse_double(c.cell.values[xi]);
    for (double y : it->second) {
      xs.push_back(x);
      ys.push_back(y);
    }
  }
  std::string unit = metric->unit.empty() ? "" : " " + metric->unit;
  std::string rows;
  for (const auto& name : order) {
    const auto& [xs, ys] = points[name];
    std::string fit = "—", r2 = "—";
    try {
      auto f = stats::fit_linear(xs, ys);
      // "18.06 us fixed + 1.52 us/batch"; without a unit "1 fixed + 10 per x".
      fit = fmt::format("{}{} fixed {} {}{}{}", util::format_number(f.fixed), unit, f.marginal < 0 ? "−" : "+",
                        util::format_number(std::fabs(f.marginal)), unit.empty() ? " per " : unit + "/", model.axis);
      r2 = fmt::format("{:.3f}{}", f.r_squared, f.poor_fit ? " (poor fit)" : "");
    } catch (const Error&) {
      fit = "— (needs passing cells at 2 values of " + model.axis + ")";
    }
    rows += fmt::format("| {} | {} | {} | {} |\n", escape_cell(name), escape_cell(fit), r2, xs.size());
  }
  return fmt::format(
      "\n**Model:** `{}` = fixed + marginal × `{}`, least squares over every sample of the passing cells.\n\n"
      "| variant | fit | R² | samples |\n| --- | --- | ---: | ---: |\n{}",
      model.metric, model.axis, rows);
}

// Comparisons whose cell and baseline ran on different machines (host, GPU names, driver).
std::string machine_warnings(const std::vector<CellComparison>& comps) {
  std::vector<std::string> lines;
  for (const auto& cc : comps) {
    if (cc.is_baseline || !cc.base || !cc.cell->latest() || !cc.unavailable.empty()) continue;
    std::vector<std::string> keys;
    std::vector<std::string> descs;
    auto add = [&](const std::vector<const Record*>& pool, const char* who) {
      for (const auto* r : pool) {
        std::string key = runner::machine_key(r->env);
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        keys.push_back(key);
        std::vector<std::string> gpus;
        for (const auto& g : r->env.gpus) gpus.push_back(g.name);
        descs.push_back(fmt::format("{} run {} on {} ({}{})", who, r->run,
                                    r->env.host.empty() ? "unknown host" : r->env.host,
                                    gpus.empty() ? "no GPU" : fmt::format("{}", fmt::join(gpus, ", ")),
                                    r->env.driver.empty() ? "" : ", driver " + r->env.driver));
      }
    };
    add(cc.base->pool(), "baseline");
    add(cc.cell->pool(), "cell");
    if (keys.size() > 1)
      lines.push_back(fmt::format("- ⚠ {} is compared with its baseline across different machines: {}",
                                  cc.cell->latest()->label(), fmt::join(descs, "; ")));
  }
  if (lines.empty()) return {};
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < 10; ++i) out += escape_cell(lines[i]) + "\n";
  if (lines.size() > 10)
    out += fmt::format("- ⚠ ... and {} more comparisons across different machines\n", lines.size() - 10);
  return out;
}

// Comparisons whose cell and baseline pools ran different code (their Abtrack-Code differ): the
// change then mixes the code's change with the variant's.
std::string code_warnings(const std::vector<CellComparison>& comps) {
  std::vector<std::string> lines;
  for (const auto& cc : comps) {
    if (cc.is_baseline || !cc.base || !cc.cell->latest() || !cc.base->latest() || !cc.unavailable.empty()) continue;
    const Record* c = cc.cell->latest();
    const Record* b = cc.base->latest();
    if (c->code.same_code(b->code)) continue;
    auto name = [](const Record* r) { return r->code.short_name(); };
    lines.push_back(
        fmt::format("- ⚠ {} is compared with a baseline measured on other code: baseline run {} on {}, run {} on {} "
                    "(run the baseline again on this code)",
                    c->label(), b->run, name(b), c->run, name(c)));
  }
  if (lines.empty()) return {};
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < 10; ++i) out += escape_cell(lines[i]) + "\n";
  if (lines.size() > 10)
    out += fmt::format("- ⚠ ... and {} more comparisons with a baseline on other code\n", lines.size() - 10);
  return out;
}

// Artifacts that are byte-identical between different variants: a no-op A/B (a config the
// build or an autotuner ignored). Variants differ on the baseline's axes (every axis without one).
std::string artifact_warnings(const plan::Plan& plan, const std::vector<CellRuns>& cells) {
  std::vector<std::size_t> variant_axes;
  for (std::size_t a = 0; a < plan.axes.size(); ++a) {
    bool named = !plan.baseline || std::any_of(plan.baseline->begin(), plan.baseline->end(),
                                               [&](const auto& kv) { return kv.first == plan.axes[a].name; });
    if (named) variant_axes.push_back(a);
  }
  struct Group {
    std::vector<std::string> variants, paths;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;  // sha256 -> who produced it
  for (const auto& c : cells) {
    const Record* r = c.latest();
    if (!r) continue;
    std::vector<std::string> parts;
    for (auto a : variant_axes) parts.push_back(plan.axes[a].name + "=" + c.cell.values[a]);
    std::string variant = fmt::format("{}", fmt::join(parts, " "));
    for (const auto& art : r->artifacts) {
      if (art.sha256.empty()) continue;
      if (!groups.count(art.sha256)) order.push_back(art.sha256);
      auto& g = groups[art.sha256];
      if (std::find(g.variants.begin(), g.variants.end(), variant) == g.variants.end()) g.variants.push_back(variant);
      if (std::find(g.paths.begin(), g.paths.end(), art.path) == g.paths.end()) g.paths.push_back(art.path);
    }
  }
  std::string out;
  std::size_t shown = 0, more = 0;
  for (const auto& sha : order) {
    const auto& g = groups[sha];
    if (g.variants.size() < 2) continue;
    if (shown == 10) {
      ++more;
      continue;
    }
    ++shown;
    auto list = [](const std::vector<std::string>& v) {
      std::vector<std::string> head(v.begin(), v.begin() + std::min<std::size_t>(v.size(), 4));
      std::string s = fmt::format("{}", fmt::join(head, ", "));
      if (v.size() > 4) s += fmt::format(" and {} more", v.size() - 4);
      return s;
    };
    out += escape_cell(fmt::format("- ⚠ identical artifacts: variants {} produced byte-identical {} (sha256 {}): the "
                                   "variants may not differ (a no-op A/B?)",
                                   list(g.variants), list(g.paths), sha.substr(0, 12))) +
           "\n";
  }
  if (more) out += fmt::format("- ⚠ ... and {} more groups of identical artifacts\n", more);
  return out;
}

// With three or more revisions: each revision against the one before it in `revisions:`, per
// cell of the other axes — the path a series of commits took. Holm over this table's comparisons.
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

std::string step_table(const plan::Plan& plan, const std::vector<CellRuns>& cells) {
  const plan::Metric& m = primary_metric(plan);
  if (plan.revisions.size() < 3 || m.better == plan::Better::none) return {};
  std::vector<std::vector<const CellRuns*>> groups;  // one per value of the other axes, in rev order
  for (const auto& c : cells) {
    auto same_rest = [&](const std::vector<const CellRuns*>& g) {
      return std::equal(c.cell.values.begin() + 1, c.cell.values.end(), g.front()->cell.values.begin() + 1);
    };
    auto g = std::find_if(groups.begin(), groups.end(), same_rest);
    if (g == groups.end()) groups.push_back({&c});
    else g->push_back(&c);
  }
  struct Step {
    const CellRuns* cell;
    std::string note;     // why there is no comparison
    std::string against;  // the earlier revision, when `exclude:` left out the one right before
    stats::Comparison result;
  };
  auto rev_index = [&](const CellRuns* c) {
    return std::find_if(plan.revisions.begin(), plan.revisions.end(),
                        [&](const auto& r) { return r.first == c->cell.values[0]; }) -
           plan.revisions.begin();
  };
  std::vector<Step> steps;
  for (const auto& g : groups)
    for (std::size_t i = 0; i < g.size(); ++i) {
      Step st{g[i], i == 0 ? "start" : "", "", {}};
      if (i > 0 && rev_index(g[i]) != rev_index(g[i - 1]) + 1) st.against = g[i - 1]->cell.values[0];
      if (i > 0) {
        if (!g[i]->latest() || !g[i - 1]->latest()) st.note = "pending";
        else if (g[i]->outcome() != Outcome::pass || g[i - 1]->outcome() != Outcome::pass) st.note = "no verdict";
        else {
          auto cmp = record::compare_pools(plan, *g[i - 1], *g[i]);
          auto mc = std::find_if(cmp.metrics.begin(), cmp.metrics.end(),
                                 [&](const record::MetricComparison& x) { return x.metric == m.name; });
          if (mc == cmp.metrics.end()) st.note = "—";
          else st.result = mc->result;
        }
      }
      steps.push_back(std::move(st));
    }
  std::vector<stats::Comparison> family;
  for (const auto& st : steps)
    if (st.note.empty()) family.push_back(st.result);
  const auto with_p =
      std::count_if(family.begin(), family.end(), [](const stats::Comparison& c) { return c.p_value.has_value(); });
  if (with_p > 1) stats::adjust_family(family);
  std::string rows;
  std::size_t k = 0;
  for (auto& st : steps) {
    if (st.note.empty()) st.result = family[k++];
    auto pooled = st.cell->pooled_samples();
    auto ps = pooled.find(m.name);
    std::vector<std::string> row;
    for (const auto& v : st.cell->cell.values) row.push_back(escape_cell(v));
    row.push_back(ps == pooled.end() || !st.cell->latest() ? "" : escape_cell(median_text(ps->second, false)));
    const std::string vs = st.against.empty() ? "" : " (vs " + escape_cell(st.against) + ")";
    row.push_back((st.note.empty() ? escape_cell(comparison_text(st.result)) : st.note) + vs);
    rows += "| " + fmt::format("{}", fmt::join(row, " | ")) + " |\n";
  }
  std::string head = "\n**Step by step:** each revision against the one before it in `revisions:`";
  if (with_p > 1) head += fmt::format(" (Holm over these {} comparisons)", with_p);
  head += ".\n\n|";
  std::string rule = "|";
  for (const auto& a : plan.axes) head += " " + escape_cell(a.name) + " |", rule += " --- |";
  head += fmt::format(" `{}` median | Δ vs previous |\n", m.name);
  rule += " ---: | ---: |\n";
  return head + rule + rows;
}

}  // namespace

std::string escape_cell(std::string_view raw) {
  const std::string text = util::utf8_tail(raw, raw.size());  // never invalid UTF-8 in the document
  std::string out;
  for (char c : text) {
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
    auto b = std::find_if(cells.begin(), cells.end(), [&](const CellRuns& c) { return c.cell == *base_cell; });
    const Record* base = b == cells.end() ? nullptr : b->latest();
    if (base) cc.base = &*b;
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
  auto compared = record::compared_metrics(plan);
  const plan::Metric& primary = primary_metric(plan);
  std::size_t with_p = 0;
  auto comps = compare_cells(plan, cells, with_p);

  std::map<std::string, std::string> out;

  // ---- results
  std::string t;
  std::vector<std::string> head;
  for (const auto& a : plan.axes) head.push_back(escape_cell(a.name));
  // The sample count column; renamed when an axis already says "n".
  bool n_taken = std::any_of(plan.axes.begin(), plan.axes.end(), [](const plan::Axis& a) { return a.name == "n"; });
  head.push_back(n_taken ? "samples" : "n");
  for (const auto& m : plan.metrics) {
    head.push_back(escape_cell(m.unit.empty() ? m.name : fmt::format("{} ({})", m.name, m.unit)));
    if (plan.baseline && std::find(compared.begin(), compared.end(), &m) != compared.end())
      head.push_back(escape_cell("Δ " + m.name));
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
  bool any_exact = false, any_absolute = false, any_paired = false;  // the footnote explains them when they occur
  bool any_throttled = false;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    const Record* r = c.latest();
    std::vector<std::string> row;
    for (const auto& v : c.cell.values) row.push_back(escape_cell(v));
    if (!r) {
      row.push_back("");
      for (const auto& m : plan.metrics) {
        row.push_back("");
        if (plan.baseline && std::find(compared.begin(), compared.end(), &m) != compared.end()) row.push_back("");
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
        if (!(plan.baseline && std::find(compared.begin(), compared.end(), &m) != compared.end())) continue;
        const auto& cc = comps[i];
        std::string cell;
        if (cc.is_baseline) cell = "baseline";
        else if (!cc.unavailable.empty()) cell = "— (" + cc.unavailable + ")";
        else {
          auto mc = std::find_if(cc.result.metrics.begin(), cc.result.metrics.end(),
                                 [&](const record::MetricComparison& x) { return x.metric == m.name; });
          if (mc == cc.result.metrics.end()) cell = "—";
          else {
            const auto& res = mc->result;
            any_exact = any_exact || res.exact;
            any_absolute = any_absolute || res.absolute;
            any_paired = any_paired || res.analysis == "paired";
            cell = comparison_text(res);
          }
        }
        row.push_back(escape_cell(cell));
      }
      row.push_back(escape_cell(gates_text(*c.deciding())));
      // The watcher's throttle reasons over the pool's runs whose samples count (runner/watch.hpp).
      std::vector<std::string> throttled;
      for (const auto* p : c.pool())
        if (p->data.outcome != Outcome::invalid)
          throttled = runner::merge_throttle(throttled, p->data.throttled.or_empty());
      any_throttled = any_throttled || !throttled.empty();
      row.push_back(
          outcome_text(c.outcome()) +
          (throttled.empty() ? "" : escape_cell(fmt::format(" (*throttled*: {})", fmt::join(throttled, ", ")))));
      std::vector<std::string> numbers;
      for (const auto* p : c.pool()) numbers.push_back(std::to_string(p->run));
      row.push_back(fmt::format("{}", fmt::join(numbers, ", ")));
    }
    t += "| " + fmt::format("{}", fmt::join(row, " | ")) + " |\n";
  }
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
      if (any_exact)
        t +=
            " *(exact)*: every sample of each arm is the same value, so the change is exact, with no CI and no p-value "
            "(outside the Holm family); beyond ±" +
            fmt::format("{:g}", plan.min_effect_pct) + "% it is better or worse.";
      if (any_paired)
        t +=
            " *paired ×N*: the cell and its baseline were measured in the same N rounds of one invocation (interleaved), so "
            "they are compared round by round, which cancels drift between rounds: Δ is the mean over the rounds of the "
            "difference of the arms' mean log samples. σw is the spread of the samples within an invocation, σb that of "
            "an invocation's own offset beyond what its round shares (Kalibera & Jones). *samples*: the invocations agree "
            "(the rounds vary no more than the samples predict), so every sample counts (Student's t CI from the "
            "within-invocation variance); *rounds*: they do not, so the round is the unit (Student's t on the rounds); "
            "*auto*: `rounds: auto` looked after every round, so the CI is an anytime-valid confidence sequence "
            "(docs/statistics.md).";
      if (any_absolute)
        t += " *(abs)*: a sample is ≤ 0, so there is no ratio: the change is the absolute B − A in the metric's unit "
             "(Hodges–Lehmann on the values), its CI judged against 0.";
    }
    if (any_throttled)
      t +=
          " *throttled*: NVML reported these clock-event reasons while the GPU was busy during a run of the pool, so its "
          "times may be slower than the GPU's; `throttle: invalid` in the plan makes such runs invalid.";
    t += "\n";
  }
  out["results"] = t;

  // ---- summary
  std::size_t measured = 0, pass = 0, fail = 0, invalid = 0;
  for (const auto& c : cells) {
    if (c.latest()) {
      ++measured;
      if (c.outcome() == Outcome::pass) ++pass;
      else if (c.outcome() == Outcome::fail) ++fail;
      else ++invalid;
    }
  }
  double command_s = options.command_s_left_out;
  std::size_t committed = options.runs_left_out;
  for (const auto& r : records)
    if (r.experiment == plan.experiment) command_s += r.data.command_s, ++committed;
  std::string s = fmt::format("**{} of {} cells measured**: {} pass, {} fail, {} invalid; {} pending. ", measured,
                              cells.size(), pass, fail, invalid, cells.size() - measured);
  // What the experiment cost the machine, so that designs (fixed rounds, rounds: auto) compare.
  s += fmt::format("{} {} committed, {} in their commands.\n", committed, committed == 1 ? "run" : "runs",
                   command_s < 90     ? fmt::format("{:.1f} s", command_s)
                   : command_s < 5400 ? fmt::format("{:.1f} min", command_s / 60)
                                      : fmt::format("{:.2f} h", command_s / 3600));
  // (with revisions:, the cells of different revisions run different code by design)
  const std::string code = plan.revisions.empty() ? code_warnings(comps) : std::string();
  if (auto w = machine_warnings(comps) + code + artifact_warnings(plan, cells); !w.empty()) s += "\n" + w;
  s += evidence(plan, cells);
  if (plan.prediction) {
    const auto& p = *plan.prediction;
    s += fmt::format("\n**Prediction:** `{}` {}", p.metric, pct(p.change_pct));
    if (p.range_pct) s += fmt::format(" (range {} to {})", pct(p.range_pct->first), pct(p.range_pct->second));
    s += ".";
    if (!p.range_pct) s += " No range was given, so the prediction can at best be partly confirmed.";
    s += "\n";
  }
  if (plan.baseline && !compared.empty()) {
    // Variants: the values of the baseline's axes; cells of one variant differ on the others.
    // One table per compared metric: the prediction's first, then each with `better:`.
    std::vector<const plan::Metric*> summarised;
    if (plan.prediction) summarised.push_back(plan.metric(plan.prediction->metric));
    for (const auto* cm : compared)
      if (std::find(summarised.begin(), summarised.end(), cm) == summarised.end()) summarised.push_back(cm);
    std::vector<std::string> variant_names;
    std::map<std::string, std::vector<const CellComparison*>> by_variant;
    for (const auto& cc : comps) {
      if (cc.is_baseline) continue;
      std::vector<std::string> parts;
      for (const auto& [axis, value] : *plan.baseline) {
        for (std::size_t a = 0; a < plan.axes.size(); ++a)
          if (plan.axes[a].name == axis) parts.push_back(axis + "=" + cc.cell->cell.values[a]);
      }
      std::string name = fmt::format("{}", fmt::join(parts, " "));
      if (!by_variant.count(name)) variant_names.push_back(name);
      by_variant[name].push_back(&cc);
    }
    for (const plan::Metric* mp : summarised) {
      const plan::Metric& m = *mp;
      const bool predicted = plan.prediction && plan.prediction->metric == m.name;
      std::string rows;
      for (const auto& name : variant_names) {
        std::vector<std::optional<double>> deltas;
        std::map<std::string, int> verdicts;
        std::vector<stats::PredictionOutcome> judged;
        for (const auto* cc : by_variant[name]) {
          auto mc = std::find_if(cc->result.metrics.begin(), cc->result.metrics.end(),
                                 [&](const record::MetricComparison& x) { return x.metric == m.name; });
          if (mc == cc->result.metrics.end()) {
            deltas.push_back(std::nullopt);
            continue;
          }
          // An absolute change has no ratio to average.
          deltas.push_back(mc->result.absolute ? std::nullopt : std::optional<double>(mc->result.delta_pct));
          ++verdicts[stats::verdict_text(mc->result)];
          if (predicted) {
            stats::Prediction pr{
                plan.prediction->change_pct,
                plan.prediction->range_pct
                    ? stats::Interval{plan.prediction->range_pct->first, plan.prediction->range_pct->second}
                    : stats::Interval{plan.prediction->change_pct, plan.prediction->change_pct}};
            judged.push_back(stats::judge_prediction(pr, mc->result.delta_ci_pct));
          }
        }
        std::string geo = "—";
        try {
          auto sw = stats::geomean_deltas_pct(deltas);
          if (sw.delta_pct) geo = fmt::format("{} over {} of {} cells", pct(*sw.delta_pct), sw.cells, deltas.size());
        } catch (const Error&) {
          geo = "— (values ≤ −100%)";
        }
        std::vector<std::string> vparts;
        for (const auto& [v, n] : verdicts) vparts.push_back(fmt::format("{} {}", n, v));
        std::string judgement = "—";
        if (!judged.empty()) {
          bool all_c = std::all_of(judged.begin(), judged.end(),
                                   [](auto o) { return o == stats::PredictionOutcome::confirmed; });
          bool all_r =
              std::all_of(judged.begin(), judged.end(), [](auto o) { return o == stats::PredictionOutcome::refuted; });
          judgement = all_c ? "confirmed" : all_r ? "refuted" : "partly";
          judgement += fmt::format(" ({} of {} cells compared)", judged.size(), deltas.size());
        }
        rows += fmt::format("| {} | {} | {} |{}\n", escape_cell(name), escape_cell(geo),
                            escape_cell(vparts.empty() ? "—" : fmt::format("{}", fmt::join(vparts, ", "))),
                            predicted ? " " + escape_cell(judgement) + " |" : "");
      }
      if (!rows.empty()) {
        s += fmt::format("\n| variant | Δ `{}` vs baseline (geometric mean) | verdicts |{}\n", m.name,
                         predicted ? " prediction |" : "");
        s += std::string("| --- | ---: | --- |") + (predicted ? " --- |" : "") + "\n" + rows;
      }
    }
  }
  s += step_table(plan, cells);
  if (plan.model) s += model_table(plan, cells);
  if (options.plot) {
    std::vector<std::string> names;
    for (const auto& m : plan.metrics)
      if (m.better != plan::Better::none) names.push_back(m.name);
    std::string alt =
        fmt::format("{}: {} by {}", plan.experiment, fmt::join(names, ", "), plan.axes[plot_x_axis(plan)].name);
    std::erase_if(alt, [](char c) { return c == '[' || c == ']' || c == '\\' || c == '\n' || c == '\r'; });
    s += fmt::format("\n![{}]({})\n", escape_cell(alt), plot_link_target(plan));
  }
  out["summary"] = s;

  // ---- runs
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
  out["runs"] = runs;
  return out;
}

}  // namespace abtrack::doc
