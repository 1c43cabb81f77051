#include "doc/evidence.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doc/render.hpp"
#include "runner/cuda_facts.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

constexpr std::size_t kMaxBullets = 30;
constexpr std::size_t kMaxKernels = 4;
constexpr std::size_t kMaxNameChars = 40;

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A kernel's name as the demangler or ncu gives it, without "void ", its parameters (the last '('
// at template depth 0) or any qualifier, the anonymous namespace's ("(anonymous namespace)::",
// ncu's "unnamed>::") included: "decode<8, 64>" from "void ns::(anonymous namespace)::decode<8,
// 64>(ns::Params)", "kernel<Tile<(Mode)0> >" from "void sm90::kernel<sm90::Tile<(sm90::Mode)0>
// >(sm90::Params)".
std::string unqualified(std::string s) {
  for (std::string_view anon : {"(anonymous namespace)::", "unnamed>::"})
    for (auto at = s.find(anon); at != std::string::npos; at = s.find(anon)) s.erase(at, anon.size());
  if (s.starts_with("void ")) s.erase(0, 5);
  int depth = 0;
  std::size_t params = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == '(' && depth == 0) params = i;
  }
  if (params != std::string::npos && params > 0) s.resize(params);
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t end = i;
    while (end < s.size() && word_char(s[end])) ++end;
    if (end > i && s.compare(end, 2, "::") == 0) i = end + 2;  // a qualifier
    else if (end > i) out.append(s, i, end - i), i = end;
    else out += s[i++];
  }
  return out;
}

// "tidy" from "_Z4tidyPKfPfi", unqualified, a long template name cut short.
std::string short_name(const std::string& mangled) {
  std::string s = unqualified(runner::demangle(mangled));
  if (s.size() > kMaxNameChars) s = s.substr(0, kMaxNameChars - 1) + "…";
  return s;
}

// A kernel's mangled name without what differs between two builds of one source: nvcc names an
// anonymous namespace after the file's path and a hash, so the trees of two revisions give one
// kernel two names. Itanium mangling gives the namespace's length first, which bounds the cut.
std::string stable_name(const std::string& mangled) {
  static constexpr std::string_view kAnonymous = "_GLOBAL__N_";
  std::string out;
  std::size_t from = 0;
  for (auto at = mangled.find(kAnonymous); at != std::string::npos; at = mangled.find(kAnonymous, from)) {
    std::size_t digits = at;
    while (digits > from && std::isdigit(static_cast<unsigned char>(mangled[digits - 1]))) --digits;
    std::size_t length = 0;  // stays 0 without digits, or with too many to be a length
    std::from_chars(mangled.data() + digits, mangled.data() + at, length);
    if (length < kAnonymous.size() || at + length > mangled.size()) {
      out.append(mangled, from, at + kAnonymous.size() - from);
      from = at + kAnonymous.size();
      continue;
    }
    out.append(mangled, from, digits - from);
    out += "12_GLOBAL__N_1";  // GCC's name for every anonymous namespace
    from = at + length;
  }
  out.append(mangled, from);
  return out;
}

// A kernel's name reduced to what ncu's name for it ("void unnamed>::decode<8>(Params)") and the
// demangler's ("void ns::(anonymous namespace)::decode<8>(ns::Params)") both keep: unqualified,
// without casts of template values ("(ModelType)0" is "0"), `const`, references or spaces:
// "decode<8>".
std::string launch_name(const std::string& name) {
  const std::string s = unqualified(name);
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {  // a cast of a template value: "(ModelType)0", "(unsigned char)1"
      std::size_t close = s.find(')', i);
      bool cast =
          close != std::string::npos && close + 1 < s.size() && close > i + 1 &&
          (std::isdigit(static_cast<unsigned char>(s[close + 1])) || s[close + 1] == '-') &&
          std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i + 1), s.begin() + static_cast<std::ptrdiff_t>(close),
                      [](char c) { return word_char(c) || c == ' '; });
      if (cast) {
        i = close + 1;
        continue;
      }
    }
    if (word_char(s[i])) {
      std::size_t end = i;
      while (end < s.size() && word_char(s[end])) ++end;
      if (s.compare(i, end - i, "const") != 0) out.append(s, i, end - i);
      i = end;
      continue;
    }
    if (s[i] != ' ' && s[i] != '&') out += s[i];
    ++i;
  }
  return out;
}

// 90 for "sm_90a", 100 for "sm_100"; 0 when it is not one.
int arch_number(const std::string& arch) {
  int n = 0;
  if (arch.starts_with("sm_")) std::from_chars(arch.data() + 3, arch.data() + arch.size(), n);
  return n;
}

// The kernel of `facts` that ncu profiled: the one whose launch_name is that of a name ncu gave
// (`profiled`, the first that names one kernel; of one kernel built for several architectures,
// the newest build); nullptr when none does.
const metrics::KernelFacts* profiled_kernel(const runner::CudaFacts& facts, const std::vector<std::string>& profiled) {
  for (const auto& name : profiled) {
    const std::string want = launch_name(name);
    const metrics::KernelFacts* found = nullptr;
    bool one = true;
    for (const auto& k : facts.kernels) {
      if (launch_name(runner::demangle(k.name)) != want) continue;
      if (found && stable_name(found->name) != stable_name(k.name)) one = false;
      if (!found || arch_number(k.arch) > arch_number(found->arch)) found = &k;
    }
    if (found && one) return found;
  }
  return nullptr;
}

// The kernels ncu profiled for cell `c`, as ncu names them: in the latest run of its pool that
// was profiled (a batch's later rounds are not: plan::ncu_every_run).
std::vector<std::string> profiled_names(const record::CellRuns& c) {
  const auto pool = c.pool();
  for (auto r = pool.rbegin(); r != pool.rend(); ++r) {
    std::vector<std::string> out;
    for (const auto& p : (*r)->data.profiles.or_empty()) out.insert(out.end(), p.kernels.begin(), p.kernels.end());
    if (!out.empty()) return out;
  }
  return {};
}

// The short names of the SASS classes, as the document shows them.
std::string class_label(const std::string& cls) {
  static const std::pair<const char*, const char*> labels[] = {
      {"total", "SASS"},      {"global_load", "LDG"},  {"global_store", "STG"},  {"global_atomic", "ATOMG/RED"},
      {"generic_load", "LD"}, {"generic_store", "ST"}, {"shared_load", "LDS"},   {"shared_store", "STS"},
      {"local_load", "LDL"},  {"local_store", "STL"},  {"async_copy", "LDGSTS"}, {"tma", "TMA"},
      {"mma", "MMA"},         {"wgmma", "WGMMA"},      {"barrier", "barriers"},  {"conversion", "conversions"}};
  for (const auto& [k, v] : labels)
    if (cls == k) return v;
  return cls;
}

std::string value_text(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "?"; }

// "regs 32 → 40, spill stores 268 → 0 B, STL 84 → 0" for what differs; "" when nothing does.
std::string kernel_diff(const metrics::KernelFacts& a, const metrics::KernelFacts& b) {
  std::vector<std::string> parts;
  auto field = [&](const char* label, const std::optional<std::int64_t>& x, const std::optional<std::int64_t>& y,
                   const char* unit) {
    if (x != y) parts.push_back(fmt::format("{} {} → {}{}", label, value_text(x), value_text(y), unit));
  };
  field("regs", a.registers, b.registers, "");
  field("smem", a.shared_bytes, b.shared_bytes, " B");
  field("stack", a.stack_bytes, b.stack_bytes, " B");
  field("local", a.local_bytes, b.local_bytes, " B");
  field("spill stores", a.spill_store_bytes, b.spill_store_bytes, " B");
  field("spill loads", a.spill_load_bytes, b.spill_load_bytes, " B");
  std::set<std::string> classes;
  for (const auto& [c, n] : a.sass) classes.insert(c);
  for (const auto& [c, n] : b.sass) classes.insert(c);
  for (const auto& c : classes) {
    auto x = a.sass.count(c) ? a.sass.at(c) : 0;
    auto y = b.sass.count(c) ? b.sass.at(c) : 0;
    if (x != y) parts.push_back(fmt::format("{} {} → {}", class_label(c), x, y));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "warps=8" for a cell: its values on the axes the baseline names (every axis without one).
std::string variant_label(const plan::Plan& plan, const plan::Cell& cell) {
  std::vector<std::string> parts;
  for (std::size_t a = 0; a < plan.axes.size(); ++a) {
    bool named = !plan.baseline || std::any_of(plan.baseline->begin(), plan.baseline->end(),
                                               [&](const auto& kv) { return kv.first == plan.axes[a].name; });
    if (named) parts.push_back(plan.axes[a].name + "=" + cell.values[a]);
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

// How a counter's value reads.
enum class Kind { count, bytes, pct, ratio };

// The short names of the `ncu: occupancy` set's metrics (plan.cpp's ncu_set), in the order shown.
struct SetLabel {
  const char* suffix;
  const char* label;
  Kind kind;
};
constexpr SetLabel kSetLabels[] = {
    {"regs", "regs", Kind::count},
    {"smem_static", "static smem", Kind::bytes},
    {"smem_dynamic", "dynamic smem", Kind::bytes},
    {nullptr, nullptr, Kind::count},  // here: CTAs/SM and the binding limit
    {"theoretical", "theoretical occupancy", Kind::pct},
    {"achieved", "warps active", Kind::pct},
    {"sm", "SM throughput", Kind::pct},
    {"dram", "DRAM", Kind::pct},
    {"l2", "L2", Kind::pct},
    {"tensor", "tensor pipe", Kind::pct},
    {"stall_long_sb", "long-scoreboard stall", Kind::ratio},
    {"stall_short_sb", "short-scoreboard stall", Kind::ratio},
    {"stall_barrier", "barrier stall", Kind::ratio},
    {"stall_mio", "MIO-throttle stall", Kind::ratio},
    {"stall_math", "math-pipe stall", Kind::ratio},
    {"stall_wait", "wait stall", Kind::ratio},
    {"stall_gmma", "gmma stall", Kind::ratio},
};
// The occupancy limits: which resource each limit_* metric counts.
constexpr std::pair<const char*, const char*> kLimits[] = {
    {"limit_regs", "registers"}, {"limit_smem", "shared memory"}, {"limit_warps", "warps"}, {"limit_blocks", "blocks"}};

using Samples = std::map<std::string, std::vector<double>>;

std::optional<double> median_of(const Samples& s, const std::string& metric) {
  auto it = s.find(metric);
  if (it == s.end() || it->second.empty()) return std::nullopt;
  return stats::median(it->second);
}

std::string number_text(const std::optional<double>& v, Kind kind) {
  if (!v) return "?";
  switch (kind) {
    case Kind::pct: return fmt::format("{:.1f}%", *v);
    case Kind::ratio: return fmt::format("{:.2f}", *v);
    default: return util::format_number(*v);
  }
}

// "regs 225 → 123", "DRAM 28.5% → 36.0%", "static smem 1024 → 2048 B"; "" when the medians do not
// differ meaningfully (kEvidenceMinChangePct of the larger, and in what is shown).
std::string change_text(const std::string& label, const std::optional<double>& a, const std::optional<double>& b,
                        Kind kind, const std::string& unit = {}) {
  if (!a && !b) return {};
  if (a && b) {
    if (std::fabs(*a - *b) < kEvidenceMinChangePct / 100 * std::max(std::fabs(*a), std::fabs(*b))) return {};
    if (number_text(a, kind) == number_text(b, kind)) return {};
  }
  std::string suffix = kind == Kind::bytes                 ? " B"
                       : unit.empty() || kind == Kind::pct ? ""
                       : unit == "%"                       ? "%"
                                                           : " " + unit;
  return fmt::format("{} {} → {}{}", label, number_text(a, kind), number_text(b, kind), suffix);
}

// One arm's occupancy: the CTAs per SM its limits allow and the resources that bind (every limit
// that ties for the smallest); nullopt without any limit value.
std::optional<std::pair<double, std::string>> occupancy_limit(const Samples& s,
                                                              const std::map<std::string, std::string>& set) {
  std::optional<double> least;
  std::vector<std::string> binding;
  for (const auto& [suffix, resource] : kLimits) {
    auto it = set.find(suffix);
    if (it == set.end()) continue;
    auto v = median_of(s, it->second);
    if (!v) continue;
    if (!least || *v < *least) least = *v, binding.clear();
    if (*v == *least) binding.push_back(resource);
  }
  if (!least) return std::nullopt;
  return std::pair{*least, fmt::format("{}", fmt::join(binding, "+"))};
}

// A watched value as the record keeps it (record.cpp: to 3 decimals).
double as_recorded(double v) { return std::round(v * 1000) / 1000; }

}  // namespace

std::string code_changes(const runner::CudaFacts& base, const runner::CudaFacts& var,
                         const std::vector<std::string>& profiled_base, const std::vector<std::string>& profiled_var) {
  auto same_kernel = [](const metrics::KernelFacts& a, const metrics::KernelFacts& b) {
    return a.arch == b.arch && stable_name(a.name) == stable_name(b.name);
  };
  std::vector<std::string> kernels;
  std::size_t more = 0;
  auto add = [&](std::string text) {
    if (kernels.size() < kMaxKernels) kernels.push_back(std::move(text));
    else ++more;
  };
  // The kernels ncu profiled, when they are two different kernels (two implementations): the
  // facts that explain the counters, first; the other kernels of each side only counted then.
  const auto* pb = profiled_kernel(base, profiled_base);
  const auto* pv = profiled_kernel(var, profiled_var);
  const bool paired = pb && pv && !same_kernel(*pb, *pv);
  if (paired) {
    const std::string d = kernel_diff(*pb, *pv);
    kernels.push_back(fmt::format("profiled `{}` → `{}`: {}", short_name(pb->name), short_name(pv->name),
                                  d.empty() ? "the same registers, memory and instruction counts" : d));
  }
  std::size_t only_here = 0, only_base = 0;
  for (const auto& k : var.kernels) {
    auto it = std::find_if(base.kernels.begin(), base.kernels.end(),
                           [&](const metrics::KernelFacts& b) { return same_kernel(b, k); });
    if (it == base.kernels.end()) {
      if (paired) only_here += &k != pv;
      else add(fmt::format("`{}`: only here (regs {})", short_name(k.name), value_text(k.registers)));
      continue;
    }
    if (auto d = kernel_diff(*it, k); !d.empty()) add(fmt::format("`{}`: {}", short_name(k.name), d));
  }
  for (const auto& b : base.kernels)
    if (std::none_of(var.kernels.begin(), var.kernels.end(),
                     [&](const metrics::KernelFacts& k) { return same_kernel(b, k); })) {
      if (paired) only_base += &b != pb;
      else add(fmt::format("`{}`: only in the baseline", short_name(b.name)));
    }
  std::string out = fmt::format("{}", fmt::join(kernels, "; "));
  if (more) out += fmt::format("; and {} more kernels", more);
  if (only_here || only_base)
    out += fmt::format("; other kernels: {} only here, {} only in the baseline", only_here, only_base);
  return out;
}

std::string counter_changes(const plan::Plan& plan, const Samples& base, const Samples& variant) {
  // The metrics of each `ncu: occupancy` set the plan expanded (NAME_<suffix> reading the set's
  // counter), by NAME in plan order; the plan's other ncu metrics apart.
  std::vector<std::string> set_names;
  std::map<std::string, std::map<std::string, std::string>> sets;  // NAME -> suffix -> metric
  std::vector<const plan::Metric*> others;
  const auto* occupancy = plan::ncu_set("occupancy");
  for (const auto& m : plan.metrics) {
    if (m.source != plan::Source::ncu) continue;
    bool in_set = false;
    for (const auto& e : *occupancy) {
      const std::string tail = std::string("_") + e.suffix;
      if (m.selector != e.metric || m.name.size() <= tail.size() || !m.name.ends_with(tail)) continue;
      std::string name = m.name.substr(0, m.name.size() - tail.size());
      if (!sets.count(name)) set_names.push_back(name);
      sets[name][e.suffix] = m.name;
      in_set = true;
    }
    if (!in_set) others.push_back(&m);
  }
  std::vector<std::string> parts;
  for (const auto& name : set_names) {
    const auto& set = sets[name];
    std::vector<std::string> items;
    for (const auto& l : kSetLabels) {
      if (!l.suffix) {
        auto a = occupancy_limit(base, set), b = occupancy_limit(variant, set);
        if (!a && !b) continue;
        auto ctas = [](const auto& x) { return x ? util::format_number(x->first) : std::string("?"); };
        auto binds = [](const auto& x) { return x ? x->second : std::string("?"); };
        items.push_back(fmt::format("CTAs/SM {} → {}, limit: {} → {}", ctas(a), ctas(b), binds(a), binds(b)));
        continue;
      }
      auto it = set.find(l.suffix);
      if (it == set.end()) continue;
      if (auto t = change_text(l.label, median_of(base, it->second), median_of(variant, it->second), l.kind);
          !t.empty())
        items.push_back(t);
    }
    if (items.empty()) continue;
    parts.push_back(fmt::format("{}: {}", set_names.size() > 1 ? "ncu " + name : "ncu", fmt::join(items, ", ")));
  }
  std::vector<std::string> items;
  for (const auto* m : others)
    if (auto t = change_text(m->name, median_of(base, m->name), median_of(variant, m->name), Kind::count, m->unit);
        !t.empty())
      items.push_back(t);
  if (!items.empty()) {
    if (parts.size() == 1 && set_names.size() == 1) parts.back() += fmt::format(", {}", fmt::join(items, ", "));
    else parts.push_back(fmt::format("ncu: {}", fmt::join(items, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::optional<WatchSummary> watch_summary(const std::vector<const record::Record*>& pool) {
  bool watched = false;
  std::vector<double> clock, power, util;
  WatchSummary w;
  for (const auto* r : pool) {
    if (r->data.outcome == runner::Outcome::invalid) continue;
    for (const auto& inv : r->data.invocations) {
      if (!inv.watch || !inv.watch->nvml) continue;
      for (const auto& g : inv.watch->gpus) {
        watched = true;
        // Busy samples only: a short kernel leaves most of an invocation's samples idle, so the
        // medians over all of them say what the GPU did between launches. Records written before
        // the busy power and utilisation were kept show neither. Values as the record rounds
        // them, so that a step (its new run in memory) renders what a later verify renders.
        if (g.busy_sm_clock_mhz) clock.push_back(as_recorded(*g.busy_sm_clock_mhz));
        if (g.busy_power_w) power.push_back(as_recorded(*g.busy_power_w));
        if (g.busy_gpu_util_pct) util.push_back(as_recorded(*g.busy_gpu_util_pct));
        w.throttle = runner::merge_throttle(w.throttle, g.throttle);
      }
    }
  }
  if (!watched) return std::nullopt;
  if (!clock.empty()) w.sm_clock_mhz = stats::median(clock);
  if (!power.empty()) w.power_w = stats::median(power);
  if (!util.empty()) w.gpu_util_pct = stats::median(util);
  return w;
}

std::string watch_changes(const std::optional<WatchSummary>& base, const std::optional<WatchSummary>& variant) {
  if (!base && !variant) return {};
  auto text = [](const std::optional<WatchSummary>& w, std::optional<double> WatchSummary::*field) {
    return w && (*w).*field ? fmt::format("{:.0f}", *((*w).*field)) : std::string("?");
  };
  // A quantity neither arm has (never busy, or records from before it was kept) is left out.
  std::vector<std::string> items;
  auto add = [&](const char* label, std::optional<double> WatchSummary::*field, const char* unit) {
    auto has = [&](const std::optional<WatchSummary>& w) { return w && (*w).*field; };
    if (has(base) || has(variant))
      items.push_back(fmt::format("{} {} → {}{}", label, text(base, field), text(variant, field), unit));
  };
  add("SM", &WatchSummary::sm_clock_mhz, " MHz");
  add("power", &WatchSummary::power_w, " W");
  add("GPU util", &WatchSummary::gpu_util_pct, "%");
  auto throttle = [](const std::optional<WatchSummary>& w) {
    if (!w) return std::string("?");
    return w->throttle.empty() ? std::string("none") : fmt::format("{}", fmt::join(w->throttle, "+"));
  };
  if ((base && !base->throttle.empty()) || (variant && !variant->throttle.empty()))
    items.push_back(fmt::format("throttled: {} → {}", throttle(base), throttle(variant)));
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string evidence(const plan::Plan& plan, const std::vector<record::CellRuns>& cells) {
  if (!plan.baseline) return {};
  std::vector<std::string> lines;
  std::map<std::string, std::string> shown;  // a pair of binaries -> the cell whose bullet showed it
  std::size_t more = 0;
  for (const auto& c : cells) {
    const record::Record* r = c.latest();
    auto base_cell = plan.baseline_for(c.cell);
    if (!r || !base_cell || *base_cell == c.cell) continue;
    auto found =
        std::find_if(cells.begin(), cells.end(), [&](const record::CellRuns& x) { return x.cell == *base_cell; });
    if (found == cells.end()) continue;
    const record::CellRuns on_card = record::baseline_runs(*found, c);  // as the cell is compared
    const record::CellRuns* b = &on_card;
    if (!b->latest()) continue;
    const record::Record* base = b->latest();
    const std::string label = plan.label(c.cell);
    const auto profiled = profiled_names(c), profiled_base = profiled_names(*b);
    std::vector<std::string> parts;
    // The compiled code: the same entry of `artifacts:` in both (its {axis} replaced by each
    // cell's values), in the latest runs.
    for (std::size_t i = 0; i < r->artifacts.size() && i < base->artifacts.size(); ++i) {
      const auto& art = r->artifacts[i];
      const auto& other = base->artifacts[i];
      if (!art.cuda || !other.cuda || !art.cuda->cuda() || !other.cuda->cuda() || art.sha256 == other.sha256) continue;
      const std::string pair = fmt::format("{}\n{}\n{}\n{}", other.sha256, art.sha256, fmt::join(profiled_base, "\n"),
                                           fmt::join(profiled, "\n"));
      if (auto it = shown.find(pair); it != shown.end()) {
        parts.push_back(fmt::format("{}: as for {}", art.path, it->second));
        continue;
      }
      std::string diff = code_changes(*other.cuda, *art.cuda, profiled_base, profiled);
      if (diff.empty()) continue;
      shown[pair] = label;
      parts.push_back(fmt::format("{}: {}", art.path, diff));
    }
    if (auto t = counter_changes(plan, b->pooled_samples(), c.pooled_samples()); !t.empty()) parts.push_back(t);
    if (auto t = watch_changes(watch_summary(b->pool()), watch_summary(c.pool())); !t.empty())
      parts.push_back("NVML: " + t);
    if (parts.empty()) continue;
    if (lines.size() == kMaxBullets) {
      ++more;
      continue;
    }
    lines.push_back(
        escape_line(fmt::format("- **{}** vs {}: {}", label, variant_label(plan, *base_cell), fmt::join(parts, "; "))));
  }
  if (lines.empty()) return {};
  std::string out = fmt::format(
      "\n**Evidence against the baseline** (per compared cell, against its baseline cell: what differs in the latest runs' "
      "binaries, SASS counts being instructions in the machine code, not executed ones; ncu: the pools' medians, each counter "
      "shown when it changes by {:g}% or more, the CTAs per SM and the binding occupancy limit always; NVML: the medians over "
      "the pools' invocations of the busy SM clock, the power draw and the GPU utilisation):\n",
      kEvidenceMinChangePct);
  for (const auto& l : lines) out += l + "\n";
  if (more) out += fmt::format("- ... and {} more compared cells\n", more);
  return out;
}

}  // namespace abtrack::doc
