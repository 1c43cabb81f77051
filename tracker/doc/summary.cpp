// The summary region of the document (render_internal.hpp): what was measured and what it cost,
// the warnings, the evidence, the prediction, a table per compared metric over the variants, the
// step-by-step table of a series of revisions, the model's fit and the plot.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doc/evidence.hpp"
#include "doc/plot.hpp"
#include "doc/render_internal.hpp"
#include "record/compare.hpp"
#include "runner/environment.hpp"
#include "stats/linear_fit.hpp"
#include "stats/paired.hpp"
#include "stats/prediction.hpp"
#include "stats/sweep.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

using record::CellRuns;
using record::Record;
using runner::Outcome;

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

// The first ten of the warning `lines`, each a line, then "- ⚠ ... and N more `what`" for the rest.
std::string first_ten(const std::vector<std::string>& lines, const std::string& what) {
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < 10; ++i) out += escape_line(lines[i]) + "\n";
  if (lines.size() > 10) out += fmt::format("- ⚠ ... and {} more {}\n", lines.size() - 10, what);
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
    out += escape_line(fmt::format("- ⚠ identical artifacts: variants {} produced byte-identical {} (sha256 {}): the "
                                   "variants may not differ (a no-op A/B?)",
                                   list(g.variants), list(g.paths), sha.substr(0, 12))) +
           "\n";
  }
  if (more) out += fmt::format("- ⚠ ... and {} more groups of identical artifacts\n", more);
  return out;
}

// With three or more revisions: each revision against the one before it in `revisions:`, per
// cell of the other axes — the path a series of commits took. Holm over this table's comparisons.
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
          // (the earlier revision's runs on this one's kind of GPU, as against a baseline)
          auto cmp = record::compare_pools(plan, record::baseline_runs(*g[i - 1], *g[i]), *g[i]);
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

// "**3 of 4 cells measured**: 2 pass, 1 fail, 0 invalid; 1 pending. 7 runs committed, 1.2 s in
// their commands. Measured on NVIDIA H200.", from the records and the runs left out of them:
// the kinds of GPU of the cells' pools (record::gpu_kinds; with each kind's count of cells when
// they differ, nothing when none had a GPU).
std::string cells_line(const plan::Plan& plan, const std::vector<Record>& records, const std::vector<CellRuns>& cells,
                       const RenderOptions& options) {
  std::size_t measured = 0, pass = 0, fail = 0, invalid = 0;
  std::map<std::string, std::size_t> kinds;  // described -> cells
  for (const auto& c : cells) {
    if (c.latest()) {
      ++measured;
      ++kinds[runner::describe_kinds(record::gpu_kinds(*c.latest()))];
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
  s += fmt::format("{} {} committed, {} in their commands.", committed, committed == 1 ? "run" : "runs",
                   command_s < 90     ? fmt::format("{:.1f} s", command_s)
                   : command_s < 5400 ? fmt::format("{:.1f} min", command_s / 60)
                                      : fmt::format("{:.2f} h", command_s / 3600));
  // Where the numbers were measured: a card's speed is part of them (pools are per kind of GPU).
  if (kinds.size() == 1 && !kinds.contains("no GPU"))
    s += fmt::format(" Measured on {}.", escape_line(kinds.begin()->first));
  if (kinds.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [k, n] : kinds)
      parts.push_back(fmt::format("{} ({} cell{})", escape_line(k), n, n == 1 ? "" : "s"));
    s += fmt::format(" Measured on {}.", fmt::join(parts, ", "));
  }
  return s + "\n";
}

// The prediction, as the plan states it.
std::string prediction_text(const plan::Prediction& p) {
  std::string s;
  s += fmt::format("\n**Prediction:** `{}` {}", p.metric, pct(p.change_pct));
  if (p.range_pct) s += fmt::format(" (range {} to {})", pct(p.range_pct->first), pct(p.range_pct->second));
  s += ".";
  if (!p.range_pct) s += " No range was given, so the prediction can at best be partly confirmed.";
  s += "\n";
  return s;
}

// Variants: the values of the baseline's axes; cells of one variant differ on the others.
// One table per compared metric: the prediction's first, then each with `better:`.
std::string variant_tables(const plan::Plan& plan, const std::vector<const plan::Metric*>& compared,
                           const std::vector<CellComparison>& comps) {
  std::string s;
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
        bool all_c =
            std::all_of(judged.begin(), judged.end(), [](auto o) { return o == stats::PredictionOutcome::confirmed; });
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
  return s;
}

// The plot, linked from the summary.
std::string plot_image(const plan::Plan& plan) {
  std::vector<std::string> names;
  for (const auto& m : plan.metrics)
    if (m.better != plan::Better::none) names.push_back(m.name);
  std::string alt =
      fmt::format("{}: {} by {}", plan.experiment, fmt::join(names, ", "), plan.axes[plot_x_axis(plan)].name);
  std::erase_if(alt, [](char c) { return c == '[' || c == ']' || c == '\\' || c == '\n' || c == '\r'; });
  return fmt::format("\n![{}]({})\n", escape_cell(alt), plot_link_target(plan));
}

}  // namespace

std::vector<std::string> machine_warnings(const std::vector<CellComparison>& comps, const std::string& against) {
  std::vector<std::string> lines;
  for (const auto& cc : comps) {
    if (cc.is_baseline || !cc.base || !cc.cell->latest() || !cc.unavailable.empty()) continue;
    std::vector<std::string> keys;
    std::vector<std::string> descs;
    auto add = [&](const std::vector<const Record*>& pool, const char* who) {
      for (const auto* r : pool) {
        const std::string gpus = runner::describe_kinds(record::gpu_kinds(*r));
        std::string key = r->env.host + "\n" + r->env.driver + "\n" + gpus;
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        keys.push_back(key);
        descs.push_back(fmt::format("{} run {} on {} ({}{})", who, r->run,
                                    r->env.host.empty() ? "unknown host" : r->env.host, gpus,
                                    r->env.driver.empty() ? "" : ", driver " + r->env.driver));
      }
    };
    add(cc.base->pool(), against.c_str());
    add(cc.cell->pool(), "cell");
    if (keys.size() > 1)
      lines.push_back(fmt::format("{} is compared with its {} across different machines: {}",
                                  cc.cell->latest()->label(), against, fmt::join(descs, "; ")));
  }
  return lines;
}

std::vector<std::string> code_warnings(const std::vector<CellComparison>& comps) {
  std::vector<std::string> lines;
  for (const auto& cc : comps) {
    if (cc.is_baseline || !cc.base || !cc.cell->latest() || !cc.base->latest() || !cc.unavailable.empty()) continue;
    const Record* c = cc.cell->latest();
    const Record* b = cc.base->latest();
    if (c->code.same_code(b->code)) continue;
    auto name = [](const Record* r) { return r->code.short_name(); };
    lines.push_back(
        fmt::format("{} is compared with a baseline measured on other code: baseline run {} on {}, run {} on {} "
                    "(run the baseline again on this code)",
                    c->label(), b->run, name(b), c->run, name(c)));
  }
  return lines;
}

std::string summary_region(const plan::Plan& plan, const std::vector<Record>& records,
                           const std::vector<CellRuns>& cells, const std::vector<CellComparison>& comps,
                           const RenderOptions& options) {
  const auto compared = record::compared_metrics(plan);
  std::string s = cells_line(plan, records, cells, options);
  // (with revisions:, the cells of different revisions run different code by design)
  auto flagged = [](std::vector<std::string> lines) {
    for (auto& l : lines) l = "- ⚠ " + l;
    return lines;
  };
  const std::string code = plan.revisions.empty()
                               ? first_ten(flagged(code_warnings(comps)), "comparisons with a baseline on other code")
                               : std::string();
  if (auto w = first_ten(flagged(machine_warnings(comps)), "comparisons across different machines") + code +
               artifact_warnings(plan, cells);
      !w.empty())
    s += "\n" + w;
  s += evidence(plan, cells);
  if (plan.prediction) s += prediction_text(*plan.prediction);
  if (plan.baseline && !compared.empty()) s += variant_tables(plan, compared, comps);
  s += step_table(plan, cells);
  if (plan.model) s += model_table(plan, cells);
  if (options.plot) s += plot_image(plan);
  return s;
}

}  // namespace abtrack::doc
