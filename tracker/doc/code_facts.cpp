#include "doc/code_facts.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doc/render.hpp"
#include "runner/cuda_facts.hpp"

namespace abtrack::doc {
namespace {

constexpr std::size_t kMaxPairs = 10;
constexpr std::size_t kMaxKernels = 4;
constexpr std::size_t kMaxNameChars = 40;

// "tidy" from "_Z4tidyPKfPfi", a long template name cut short.
std::string short_name(const std::string& mangled) {
  std::string s = runner::demangle(mangled);
  // Drop the parameter list: the last '(' at template depth 0.
  int depth = 0;
  std::size_t paren = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == '(' && depth == 0) paren = i;
  }
  if (paren != std::string::npos && paren > 0) s.resize(paren);
  if (s.starts_with("void ")) s.erase(0, 5);
  if (s.size() > kMaxNameChars) s = s.substr(0, kMaxNameChars - 1) + "…";
  return s;
}

// The short names of the SASS classes, as the document shows them.
std::string class_label(const std::string& cls) {
  static const std::pair<const char*, const char*> labels[] = {
      {"total", "SASS"},         {"global_load", "LDG"},      {"global_store", "STG"},  {"global_atomic", "ATOMG/RED"},
      {"generic_load", "LD"},    {"generic_store", "ST"},     {"shared_load", "LDS"},   {"shared_store", "STS"},
      {"local_load", "LDL"},     {"local_store", "STL"},      {"async_copy", "LDGSTS"}, {"tma", "TMA"},
      {"mma", "MMA"},            {"wgmma", "WGMMA"},          {"barrier", "barriers"},  {"conversion", "conversions"}};
  for (const auto& [k, v] : labels)
    if (cls == k) return v;
  return cls;
}

std::string value_text(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "?"; }

// "regs 32 → 40, spill stores 268 → 0 B, STL 84 → 0" for what differs; "" when nothing does.
std::string kernel_diff(const metrics::KernelFacts& a, const metrics::KernelFacts& b) {
  std::vector<std::string> parts;
  auto field = [&](const char* label, const std::optional<std::int64_t>& x, const std::optional<std::int64_t>& y, const char* unit) {
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

// What differs between two facts of one artifact path, kernel by kernel (name and arch).
std::string facts_diff(const runner::CudaFacts& base, const runner::CudaFacts& var) {
  std::vector<std::string> kernels;
  std::size_t more = 0;
  auto add = [&](std::string text) {
    if (kernels.size() < kMaxKernels) kernels.push_back(std::move(text));
    else ++more;
  };
  for (const auto& k : var.kernels) {
    auto it = std::find_if(base.kernels.begin(), base.kernels.end(),
                           [&](const metrics::KernelFacts& b) { return b.name == k.name && b.arch == k.arch; });
    if (it == base.kernels.end()) {
      add(fmt::format("{}: only here (regs {})", short_name(k.name), value_text(k.registers)));
      continue;
    }
    if (auto d = kernel_diff(*it, k); !d.empty()) add(fmt::format("{}: {}", short_name(k.name), d));
  }
  for (const auto& b : base.kernels)
    if (std::none_of(var.kernels.begin(), var.kernels.end(), [&](const metrics::KernelFacts& k) { return k.name == b.name && k.arch == b.arch; }))
      add(fmt::format("{}: only in the baseline", short_name(b.name)));
  std::string out = fmt::format("{}", fmt::join(kernels, "; "));
  if (more) out += fmt::format("; and {} more kernels", more);
  return out;
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

}  // namespace

std::string code_differences(const plan::Plan& plan, const std::vector<record::CellRuns>& cells) {
  if (plan.artifacts.empty() || !plan.baseline) return {};
  std::vector<std::string> lines;
  std::set<std::string> seen;  // a pair of binaries is shown once, whatever cells share it
  std::size_t more = 0;
  for (const auto& c : cells) {
    const record::Record* r = c.latest();
    auto base_cell = plan.baseline_for(c.cell);
    if (!r || !base_cell || *base_cell == c.cell) continue;
    auto b = std::find_if(cells.begin(), cells.end(), [&](const record::CellRuns& x) { return x.cell == *base_cell; });
    if (b == cells.end() || !b->latest()) continue;
    const record::Record* base = b->latest();
    // The same entry of `artifacts:` in both (its {axis} replaced by each cell's values).
    for (std::size_t i = 0; i < r->artifacts.size() && i < base->artifacts.size(); ++i) {
      const auto& art = r->artifacts[i];
      const auto& other = base->artifacts[i];
      if (!art.cuda || !other.cuda || !art.cuda->cuda() || !other.cuda->cuda()) continue;
      if (art.sha256 == other.sha256 || !seen.insert(other.sha256 + art.sha256).second) continue;
      std::string diff = facts_diff(*other.cuda, *art.cuda);
      if (diff.empty()) continue;
      if (lines.size() == kMaxPairs) {
        ++more;
        continue;
      }
      lines.push_back(escape_cell(fmt::format("- {} vs {}, {}: {}", variant_label(plan, c.cell), variant_label(plan, *base_cell),
                                              art.path, diff)));
    }
  }
  if (lines.empty()) return {};
  std::string out = "\n**Compiled code against the baseline** (each variant's latest run; SASS counts are instructions in the "
                    "machine code, not executed ones):\n";
  for (const auto& l : lines) out += l + "\n";
  if (more) out += fmt::format("- ... and {} more pairs of differing binaries\n", more);
  return out;
}

}  // namespace abtrack::doc
