#include "runner/profile.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "metrics/ncu.hpp"
#include "runner/tools.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace abtrack::runner {
namespace {

constexpr std::size_t kShownKernels = 8;

// Sets the profile's status and message when the invocation measured nothing.
void judge(Profile& p, const util::ProcessResult& r, const metrics::NcuOutput& out, double timeout_s) {
  const std::string first_error = out.errors.empty() ? std::string() : out.errors.front();
  if (out.no_permission) {
    p.status = "no-permission";
    p.message =
        "ncu has no access to the GPU's performance counters (ERR_NVGPUCTRPERM; see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
  } else if (r.timed_out) {
    p.status = "timed-out";
    p.message = fmt::format("ncu timed out after {} s (the plan's timeout:)", util::format_number(timeout_s));
  } else if (out.rows.empty() && out.no_kernels) {
    p.status = "no-kernel";
    std::vector<std::string> seen(out.available_kernels.begin(),
                                  out.available_kernels.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                      kShownKernels, out.available_kernels.size())));
    p.message = fmt::format("no launch {}matched {} (launch {}){}", p.kernel.empty() ? "" : "of a kernel ",
                            p.kernel.empty() ? "any kernel" : fmt::format("kernel: '{}'", p.kernel), p.launch,
                            seen.empty() ? std::string()
                                         : fmt::format("; the command launched {}{}", fmt::join(seen, ", "),
                                                       out.available_kernels.size() > seen.size() ? ", ..." : ""));
  } else if (out.rows.empty() || !r.succeeded()) {
    p.status = "failed";
    const std::string tail = util::utf8_tail(r.err, 300);
    const std::string why = !first_error.empty() ? first_error : std::string(util::trim(tail));
    if (r.signal) p.message = fmt::format("ncu was killed by {}", util::signal_name(*r.signal));
    else if (r.exit_code && *r.exit_code != 0) p.message = fmt::format("ncu exited with status {}", *r.exit_code);
    else p.message = "ncu printed no metric values";
    if (!why.empty()) p.message += ": " + why;
  }
}

}  // namespace

std::string ncu_command(const std::string& ncu, const std::vector<std::string>& ncu_metrics, const std::string& kernel,
                        int launch, const std::string& command) {
  std::string out = fmt::format("{} --csv --clock-control none --print-units base --target-processes all --metrics {}",
                                util::shell_quote(ncu), fmt::join(ncu_metrics, ","));
  if (!kernel.empty()) out += " -k " + util::shell_quote("regex:" + kernel);
  out += fmt::format(" --launch-skip {} --launch-count 1 /bin/sh -c {}", launch, util::shell_quote(command));
  return out;
}

std::vector<Profile> profile_cell(const std::vector<plan::Metric>& metrics, const std::string& command,
                                  const util::ProcessSpec& spec, Executor& executor,
                                  std::map<std::string, std::vector<double>>& samples) {
  // One invocation per (kernel, launch), in the order the plan first names them.
  std::vector<std::vector<const plan::Metric*>> groups;
  for (const auto& m : metrics) {
    if (m.source != plan::Source::ncu) continue;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.front()->kernel == m.kernel && g.front()->launch == m.launch;
    });
    if (g == groups.end()) groups.push_back({&m});
    else g->push_back(&m);
  }
  std::vector<Profile> out;
  if (groups.empty()) return out;
  std::string looked;
  const std::string ncu = find_tool("ncu", "ABTRACK_NCU", &looked);
  for (const auto& group : groups) {
    Profile p;
    p.kernel = group.front()->kernel;
    p.launch = group.front()->launch;
    std::vector<std::string> names;
    for (const auto* m : group) {
      p.metrics.push_back(m->name);
      if (std::find(names.begin(), names.end(), m->selector) == names.end()) names.push_back(m->selector);
    }
    if (ncu.empty()) {
      p.status = "missing";
      p.message = "ncu not found: " + looked;
      out.push_back(std::move(p));
      continue;
    }
    p.command = ncu_command(ncu, names, p.kernel, p.launch, command);
    util::ProcessSpec s = spec;
    s.shell_command = p.command;
    auto r = executor.execute(s);
    if (r.interrupted) util::throw_if_interrupted();
    p.exit_code = r.exit_code;
    p.duration_s = r.duration_s;
    const auto parsed = metrics::parse_ncu(r.out + "\n" + r.err);
    judge(p, r, parsed, spec.timeout_s);
    if (p.ok()) {
      for (const auto& row : parsed.rows)
        if (std::find(p.kernels.begin(), p.kernels.end(), row.kernel) == p.kernels.end())
          p.kernels.push_back(row.kernel);
      std::vector<std::string> without;
      for (const auto* m : group) {
        std::vector<double> values;
        std::string unit, bad;
        bool seen = false;
        for (const auto& row : parsed.rows) {
          if (row.metric != m->selector) continue;
          seen = true;
          unit = row.unit;
          auto v = metrics::ncu_number(row.value);
          if (v && std::isfinite(*v * m->scale)) values.push_back(*v * m->scale);
          else bad = row.value;
        }
        if (seen) p.units.emplace_back(m->name, unit);
        if (!bad.empty() || values.empty())
          without.push_back(fmt::format("{} ({}{})", m->name, m->selector,
                                        bad.empty()
                                            ? ": not in ncu's output"
                                            : fmt::format(" is '{}': not a metric of this GPU, or misspelt", bad)));
        else samples[m->name] = std::move(values);
      }
      if (!without.empty()) {
        p.status = "incomplete";
        p.message = fmt::format("ncu gave no value for {}", fmt::join(without, ", "));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace abtrack::runner
