#include "plan/plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::plan {

std::vector<Cell> Plan::cells() const {
  std::vector<Cell> out;
  if (axes.empty()) return out;
  std::vector<std::size_t> index(axes.size(), 0);
  for (;;) {
    Cell c;
    for (std::size_t i = 0; i < axes.size(); ++i) c.values.push_back(axes[i].values[index[i]]);
    if (!excluded(c)) out.push_back(std::move(c));
    // Odometer with the last axis fastest, so the first axis is the slowest.
    std::size_t i = axes.size();
    while (i > 0) {
      --i;
      if (++index[i] < axes[i].values.size()) break;
      index[i] = 0;
      if (i == 0) return out;
    }
  }
}

bool matches(const Plan& plan, const Cell& cell, const Assignment& a) {
  for (const auto& [name, value] : a) {
    for (std::size_t i = 0; i < plan.axes.size(); ++i)
      if (plan.axes[i].name == name && cell.values[i] != value) return false;
  }
  return true;
}

bool Plan::excluded(const Cell& cell) const {
  return std::any_of(exclude.begin(), exclude.end(), [&](const Assignment& a) { return matches(*this, cell, a); });
}

std::string Plan::label(const Cell& cell) const {
  std::string out;
  for (std::size_t i = 0; i < axes.size() && i < cell.values.size(); ++i) {
    if (i) out += ' ';
    out += axes[i].name + "=" + cell.values[i];
  }
  return out;
}

std::optional<Cell> Plan::baseline_for(const Cell& cell) const {
  if (!baseline) return std::nullopt;
  Cell b = cell;
  for (const auto& [name, value] : *baseline)
    for (std::size_t i = 0; i < axes.size(); ++i)
      if (axes[i].name == name) b.values[i] = value;
  if (excluded(b)) return std::nullopt;
  return b;
}

namespace {
// "warps=4,stages=2,batch=16": the first cell, written as --cell takes it.
std::string example_cell_spec(const Plan& plan) {
  auto all = plan.cells();
  if (all.empty()) return "axis=value,...";
  std::string s = plan.label(all.front());
  std::replace(s.begin(), s.end(), ' ', ',');
  return s;
}
}  // namespace

Cell Plan::parse_cell(std::string_view spec) const {
  std::vector<std::string> names;
  for (const auto& a : axes) names.push_back(a.name);
  Cell c;
  c.values.assign(axes.size(), std::string());
  std::vector<bool> seen(axes.size(), false);
  // The pairs. A value may hold commas: a part without '=' continues the previous value when
  // that makes the beginning of one of its axis's values.
  std::vector<std::pair<std::string, std::string>> pairs;
  auto continues_value = [&](const std::string& part) {
    if (pairs.empty()) return false;
    auto it = std::find(names.begin(), names.end(), util::trim(pairs.back().first));
    if (it == names.end()) return false;
    const std::string joined = std::string(util::trim(pairs.back().second + "," + part));
    const auto& vals = axes[static_cast<std::size_t>(it - names.begin())].values;
    return std::any_of(vals.begin(), vals.end(), [&](const std::string& v) { return v.starts_with(joined); });
  };
  for (const auto& part : util::split(spec, ',')) {
    auto eq = part.find('=');
    if (eq == std::string::npos && continues_value(part)) pairs.back().second += "," + part;
    else if (eq != std::string::npos) pairs.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    else {
      // A bare value: name its axis when one has it.
      const std::string value(util::trim(part));
      for (const auto& a : axes)
        if (std::find(a.values.begin(), a.values.end(), value) != a.values.end())
          throw Error(Exit::usage, fmt::format("--cell: '{}' is not axis=value", part),
                      fmt::format("'{}' is a value of axis '{}': write {}={}; e.g. --cell {}", value, a.name, a.name,
                                  value, example_cell_spec(*this)));
      throw Error(Exit::usage, fmt::format("--cell: '{}' is not axis=value", part),
                  "write --cell " + example_cell_spec(*this));
    }
  }
  for (const auto& [raw_name, raw_value] : pairs) {
    std::string name(util::trim(raw_name));
    std::string value(util::trim(raw_value));
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw Error(Exit::usage, fmt::format("--cell: unknown axis '{}'{}", name, util::suggestion_suffix(name, names)),
                  fmt::format("the axes are: {}; e.g. --cell {}", fmt::join(names, ", "), example_cell_spec(*this)));
    auto i = static_cast<std::size_t>(it - names.begin());
    if (seen[i]) throw Error(Exit::usage, fmt::format("--cell: axis '{}' is named twice", name), "name each axis once");
    const auto& vals = axes[i].values;
    if (std::find(vals.begin(), vals.end(), value) == vals.end())
      throw Error(
          Exit::usage,
          fmt::format("--cell: axis '{}' has no value '{}'{}", name, value, util::suggestion_suffix(value, vals)),
          fmt::format("its values are: {}", fmt::join(vals, ", ")));
    c.values[i] = value;
    seen[i] = true;
  }
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (!seen[i])
      throw Error(Exit::usage, fmt::format("--cell: no value for axis '{}'", axes[i].name),
                  "name every axis, e.g. --cell " + example_cell_spec(*this));
  if (excluded(c)) throw Error(Exit::usage, fmt::format("--cell: cell {} is excluded by the plan", label(c)));
  return c;
}

const Metric* Plan::metric(std::string_view name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

std::filesystem::path Plan::command_dir() const { return workdir.empty() ? repo_root : repo_root / workdir; }

namespace {

enum class Quoting { none, shell, regex };

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// `value` with every ECMAScript syntax character escaped, so that it matches itself.
std::string regex_escape(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// The words of `value`, split on blanks, each shell-quoted, joined by one space.
std::string shell_words(std::string_view value) {
  std::string out;
  std::size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && is_blank(value[i])) ++i;
    std::size_t end = i;
    while (end < value.size() && !is_blank(value[end])) ++end;
    if (end > i) {
      if (!out.empty()) out += ' ';
      out += util::shell_quote(value.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

std::string substitute_as(const Plan& plan, const Cell& cell, std::string_view text, Quoting quoting) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      auto close = text.find('}', i + 1);
      if (close != std::string_view::npos) {
        std::string_view name = text.substr(i + 1, close - i - 1);
        const bool words = name.ends_with(kSplitSuffix);
        if (words) name.remove_suffix(kSplitSuffix.size());
        bool replaced = false;
        for (std::size_t a = 0; a < plan.axes.size(); ++a) {
          if (plan.axes[a].name == name) {
            const std::string& v = cell.values[a];
            switch (quoting) {
              case Quoting::none: out += v; break;
              case Quoting::shell: out += words ? shell_words(v) : util::shell_quote(v); break;
              case Quoting::regex: out += regex_escape(v); break;
            }
            replaced = true;
            break;
          }
        }
        if (replaced) {
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace

std::string substitute(const Plan& plan, const Cell& cell, std::string_view text, bool quote) {
  return substitute_as(plan, cell, text, quote ? Quoting::shell : Quoting::none);
}

std::string substitute_regex(const Plan& plan, const Cell& cell, std::string_view text) {
  return substitute_as(plan, cell, text, Quoting::regex);
}

std::vector<Metric> metrics_for(const Plan& plan, const Cell& cell) {
  std::vector<Metric> out = plan.metrics;
  for (auto& m : out) {
    m.filter = substitute_regex(plan, cell, m.filter);
    m.kernel = substitute_regex(plan, cell, m.kernel);
  }
  return out;
}

bool ncu_every_run(const Plan& plan) {
  auto used = [&](const std::string& name) {
    return std::any_of(plan.gates.begin(), plan.gates.end(), [&](const Gate& g) { return g.metric == name; }) ||
           (plan.prediction && plan.prediction->metric == name);
  };
  return std::any_of(plan.metrics.begin(), plan.metrics.end(), [&](const Metric& m) {
    return m.source == Source::ncu && (m.better != Better::none || used(m.name));
  });
}

const std::vector<NcuSetEntry>* ncu_set(std::string_view name) {
  // What an occupancy question asks (docs/plan.md, "ncu:"): what limits the CTAs per SM, how
  // many warps were active, how busy the memory and the tensor pipes were, and why warps stalled
  // (the stall ratios: warps stalled for that reason per issued instruction).
  static const std::vector<NcuSetEntry> occupancy = {
      {"regs", "launch__registers_per_thread", "regs/thread"},
      {"smem_static", "launch__shared_mem_per_block_static", "B/CTA"},
      {"smem_dynamic", "launch__shared_mem_per_block_dynamic", "B/CTA"},
      {"limit_regs", "launch__occupancy_limit_registers", "CTAs/SM"},
      {"limit_smem", "launch__occupancy_limit_shared_mem", "CTAs/SM"},
      {"limit_warps", "launch__occupancy_limit_warps", "CTAs/SM"},
      {"limit_blocks", "launch__occupancy_limit_blocks", "CTAs/SM"},
      {"theoretical", "sm__maximum_warps_per_active_cycle_pct", "%"},
      {"achieved", "sm__warps_active.avg.pct_of_peak_sustained_active", "%"},
      {"sm", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
      {"dram", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
      {"l2", "lts__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
      {"tensor", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "%"},
      {"stall_long_sb", "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "warps/issue"},
      {"stall_short_sb", "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", "warps/issue"},
      {"stall_barrier", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "warps/issue"},
      {"stall_mio", "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", "warps/issue"},
      {"stall_math", "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", "warps/issue"},
      {"stall_wait", "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "warps/issue"},
      {"stall_gmma", "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "warps/issue"},
  };
  return name == "occupancy" ? &occupancy : nullptr;
}

std::string_view to_string(Op op) {
  switch (op) {
    case Op::lt: return "<";
    case Op::le: return "<=";
    case Op::gt: return ">";
    case Op::ge: return ">=";
    case Op::eq: return "==";
    case Op::ne: return "!=";
  }
  return "?";
}

std::string_view to_string(Better b) {
  switch (b) {
    case Better::lower: return "lower";
    case Better::higher: return "higher";
    case Better::none: break;
  }
  return "";
}

bool holds(Op op, double v, double t) {
  switch (op) {
    case Op::lt: return v < t;
    case Op::le: return v <= t;
    case Op::gt: return v > t;
    case Op::ge: return v >= t;
    case Op::eq: return v == t;
    case Op::ne: return v != t;
  }
  return false;
}

std::string recipe(const Plan& plan, const Cell& cell) {
  // Each part named and length-prefixed, so no two recipes hash the same text.
  std::string text;
  auto part = [&](std::string_view name, std::string_view value) {
    text += fmt::format("{} {}\n{}\n", name, value.size(), value);
  };
  part("command", substitute(plan, cell, plan.command, true));
  part("workdir", plan.workdir);
  for (const auto& [k, v] : plan.env) part("env " + k, substitute(plan, cell, v, false));
  part("setup", plan.setup);
  part("build", plan.build);  // run as written: no {axis} in it is replaced
  // What warm-up drops decides what `samples` hold: runs that dropped other counts never pool.
  // (Nothing is added without warm-up, so those recipes stay as they were.)
  for (const auto& m : plan.metrics)
    if (m.warmup > 0) part("warmup " + m.name, std::to_string(m.warmup));
  return util::sha256_hex(text).substr(0, 16);
}

std::optional<std::pair<std::string, std::string>> auto_rounds_problem(const Plan& plan) {
  if (!plan.baseline)
    return std::pair{
        std::string(
            "rounds: auto runs until each cell's comparison with its baseline is decided, and the plan names no baseline"),
        std::string(
            "add baseline: {axis: value} (with revisions:, e.g. baseline: {rev: base}), or give a number of rounds")};
  if (std::none_of(plan.metrics.begin(), plan.metrics.end(), [](const Metric& m) { return m.better != Better::none; }))
    return std::pair{
        std::string("rounds: auto needs a metric with better: to decide on, and the plan has none"),
        std::string("add better: lower (or higher) to the metric you compare, e.g. time_us: {json: t, better: lower}")};
  return std::nullopt;
}

}  // namespace abtrack::plan
