#include "runner/run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <random>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "metrics/extract.hpp"
#include "runner/profile.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::runner {
namespace {

constexpr std::size_t kTailBytes = 4096;

Invocation to_invocation(const std::string& command, const util::ProcessResult& r) {
  Invocation inv;
  inv.command = command;
  inv.exit_code = r.exit_code;
  inv.signal = r.signal;
  inv.timed_out = r.timed_out;
  inv.duration_s = r.duration_s;
  inv.stdout_bytes = r.out_bytes;
  inv.stderr_bytes = r.err_bytes;
  inv.stdout_tail = util::utf8_tail(r.out, kTailBytes);
  inv.stderr_tail = util::utf8_tail(r.err, kTailBytes);
  return inv;
}

// Why an invocation counts as failed, or "" when it succeeded.
std::string failure(const char* what, const util::ProcessResult& r, double timeout_s) {
  if (r.timed_out) return fmt::format("{} timed out after {} s", what, util::format_number(timeout_s));
  if (r.signal) return fmt::format("{} was killed by {}", what, util::signal_name(*r.signal));
  if (r.exit_code && *r.exit_code == 127)
    return fmt::format("{} exited with status 127 (command not found?): {}", what,
                       util::trim(util::utf8_tail(r.err, 200)));
  if (r.exit_code && *r.exit_code != 0) return fmt::format("{} exited with status {}", what, *r.exit_code);
  return {};
}

// Adds one invocation's samples of `m` to the run: the first `m.warmup` apart, the rest to the
// analysed samples. `source` names the invocation in the error when warm-up would drop them all.
void add_samples(const plan::Metric& m, std::vector<double> samples, Run& run, const std::string& source) {
  const auto drop = static_cast<std::size_t>(std::max(0, m.warmup));
  if (drop > 0 && samples.size() <= drop)
    throw Error(Exit::usage, m.warmup_where,
                fmt::format("warmup: {} drops every sample of '{}': {} gave {}; nothing was recorded for this run",
                            m.warmup, m.name, source, samples.size()),
                fmt::format("warmup must be below the samples one invocation gives: lower it, or give the metric its "
                            "own (metrics: {{{}: {{..., warmup: 0}}}})",
                            m.name));
  if (drop > 0) {
    auto& w = run.warmup.ensure()[m.name];
    w.insert(w.end(), samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  auto& dst = run.samples[m.name];
  dst.insert(dst.end(), samples.begin() + static_cast<std::ptrdiff_t>(drop), samples.end());
}

// Why a metric has no samples in a run whose invocations counted: its ncu profile's message.
std::string unmeasured(const Run& run, const std::string& metric) {
  for (const auto& p : run.profiles.or_empty())
    if (std::find(p.metrics.begin(), p.metrics.end(), metric) != p.metrics.end() && !p.message.empty())
      return fmt::format("ncu did not measure {}: {}", metric, p.message);
  return fmt::format("{} was not measured", metric);
}

// Evaluates the gates and settles the outcome. `run.reason` already set means invalid.
void finish(const plan::Plan& plan, Run& run, const std::vector<std::string>& missing) {
  // A gate holds for every sample, the warm-up ones too: a wrong result is wrong however early.
  auto all = run.samples;
  for (const auto& [name, w] : run.warmup.or_empty()) all[name].insert(all[name].end(), w.begin(), w.end());
  run.gates = gates::evaluate(plan.gates, all);
  if (run.reason.empty() && !missing.empty()) run.reason = fmt::format("{}", fmt::join(missing, "; "));
  // Reasons quote what a command printed: keep them valid UTF-8 (the record and the document
  // must agree byte for byte).
  run.reason = util::utf8_tail(run.reason, run.reason.size());
  if (!run.reason.empty()) {
    run.outcome = Outcome::invalid;
    return;
  }
  std::vector<std::string> failed;
  for (const auto& g : run.gates) {
    if (g.holds) continue;
    if (!g.evaluated) {  // only an ncu metric may lack samples in a run that counts
      failed.push_back(fmt::format("gate '{}' was not evaluated: {}", g.expression, unmeasured(run, g.metric)));
      continue;
    }
    failed.push_back(fmt::format("gate '{}' does not hold: worst {} ({} of {} samples{})", g.expression,
                                 util::format_number(*g.worst), g.violations, all[g.metric].size(),
                                 run.warmup.or_empty().count(g.metric) ? ", warm-up included" : ""));
  }
  run.outcome = failed.empty() ? Outcome::pass : Outcome::fail;
  run.reason = fmt::format("{}", fmt::join(failed, "; "));
}

util::ProcessSpec spec_for(const plan::Plan& plan, const plan::Cell* cell, const std::string& command) {
  util::ProcessSpec spec;
  spec.shell_command = command;
  spec.workdir = plan.command_dir();
  spec.timeout_s = plan.timeout_s;
  for (const auto& [k, v] : plan.env) spec.env.emplace_back(k, cell ? plan::substitute(plan, *cell, v, false) : v);
  return spec;
}

}  // namespace

util::ProcessResult LocalExecutor::execute(const util::ProcessSpec& spec) { return util::run_process(spec); }

util::ProcessResult LocalExecutor::execute_watched(const util::ProcessSpec& spec, util::HeapOptional<Watch>& watch) {
  std::optional<std::string> visible;
  for (const auto& [k, v] : spec.env)
    if (k == "CUDA_VISIBLE_DEVICES") visible = v;
  if (!visible)
    if (const char* own = std::getenv("CUDA_VISIBLE_DEVICES")) visible = own;
  Watcher watcher(std::move(visible));  // stopped by its destructor if execute() throws
  util::ProcessResult r = execute(spec);
  watch = watcher.stop();
  return r;
}

double command_seconds(const Run& run) {
  double s = 0;
  for (const auto& i : run.invocations) s += i.duration_s;
  for (const auto& p : run.profiles.or_empty()) s += p.duration_s;
  return s;
}

std::vector<std::string> throttled(const std::vector<Invocation>& invocations) {
  std::vector<std::string> out;
  for (const auto& inv : invocations)
    if (inv.watch)
      for (const auto& g : inv.watch->gpus) out = merge_throttle(out, g.throttle);
  return out;
}

void apply_watched_clocks(Environment& env, const std::vector<Invocation>& invocations) {
  for (auto& gpu : env.gpus) {
    std::vector<double> busy_sm, busy_mem, sm, mem;
    for (const auto& inv : invocations) {
      if (!inv.watch) continue;
      for (const auto& g : inv.watch->gpus) {
        if (g.uuid.empty() || g.uuid != gpu.uuid) continue;
        if (g.busy_sm_clock_mhz) busy_sm.push_back(*g.busy_sm_clock_mhz);
        if (g.busy_mem_clock_mhz) busy_mem.push_back(*g.busy_mem_clock_mhz);
        if (g.sm_clock_mhz) sm.push_back(g.sm_clock_mhz->median);
        if (g.mem_clock_mhz) mem.push_back(g.mem_clock_mhz->median);
      }
    }
    auto median_of = [](const std::vector<double>& v) -> std::optional<unsigned> {
      if (v.empty()) return std::nullopt;
      return static_cast<unsigned>(std::lround(stats::median(v)));
    };
    if (!busy_sm.empty()) {
      gpu.sm_clock_mhz = median_of(busy_sm);
      gpu.mem_clock_mhz = busy_mem.empty() ? gpu.mem_clock_mhz : median_of(busy_mem);
      gpu.clocks_from = "busy";
    } else if (!sm.empty()) {
      gpu.sm_clock_mhz = median_of(sm);
      gpu.mem_clock_mhz = mem.empty() ? gpu.mem_clock_mhz : median_of(mem);
      gpu.clocks_from = "idle";
    } else {
      gpu.clocks_from = "probe";
    }
  }
}

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "fail";
    case Outcome::invalid: return "invalid";
  }
  return "invalid";
}

std::string new_measurement_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32)};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

SetupResult run_setup(const plan::Plan& plan, Executor& executor, std::string_view what) {
  std::string name(what);
  if (name.empty()) {
    const bool build = plan.revisions.empty() && !util::trim(plan.build).empty();
    name = !build ? "setup" : util::trim(plan.setup) == util::trim(plan.build) ? "build" : "build or setup";
  }
  SetupResult s;
  auto r = executor.execute(spec_for(plan, nullptr, plan.setup));
  if (r.interrupted) util::throw_if_interrupted();
  s.invocation = to_invocation(plan.setup, r);
  s.reason = failure(name.c_str(), r, plan.timeout_s);
  s.ok = s.reason.empty();
  return s;
}

Run run_cell(const plan::Plan& plan, const plan::Cell& cell, Executor& executor, const SetupResult* setup,
             const ProgressFn& progress, bool profile) {
  Run run;
  run.id = new_measurement_id();
  run.cell = cell;
  run.command = plan::substitute(plan, cell, plan.command, true);
  run.started = utc_now();
  if (setup) {
    run.setup = setup->invocation;
    if (!setup->ok) {
      run.reason = setup->reason;
      run.finished = utc_now();
      finish(plan, run, {});
      return run;
    }
  }
  std::vector<std::string> missing;
  const auto cell_metrics = plan::metrics_for(plan, cell);  // name:/state: with the cell's values
  for (int i = 0; i < plan.repeats; ++i) {
    if (progress) progress(i, plan.repeats);
    util::throw_if_interrupted();
    const metrics::MetricFiles files{plan.command_dir(), &plan, &cell};
    auto stamps = metrics::stamp_files(plan.metrics, files);
    util::HeapOptional<Watch> watch;
    auto r = executor.execute_watched(spec_for(plan, &cell, run.command), watch);
    if (r.interrupted) util::throw_if_interrupted();
    run.invocations.push_back(to_invocation(run.command, r));
    run.invocations.back().watch = std::move(watch);
    std::string what = plan.repeats > 1 ? fmt::format("invocation {} of {}", i + 1, plan.repeats) : "command";
    if (auto why = failure(what.c_str(), r, plan.timeout_s); !why.empty()) {
      run.reason = why;
      break;
    }
    if (plan.throttle == plan::Throttle::invalid) {
      if (auto t = throttled({run.invocations.back()}); !t.empty()) {
        run.reason =
            fmt::format("{} was throttled while the GPU was busy: {} (throttle: invalid)", what, fmt::join(t, ", "));
        break;
      }
    }
    for (auto& [name, e] : metrics::extract_all(cell_metrics, r.out, &files, &stamps)) {
      const auto m = std::find_if(cell_metrics.begin(), cell_metrics.end(),
                                  [&n = name](const plan::Metric& x) { return x.name == n; });
      if (!e.ok()) {
        std::string why = e.error;
        if (r.out_bytes > r.out.size())
          why += fmt::format(" (only the last {} of {} bytes of stdout were kept)", r.out.size(), r.out_bytes);
        if (plan.repeats > 1) why += fmt::format(" in {}", what);
        missing.push_back(why);
        continue;
      }
      if (m != cell_metrics.end())
        add_samples(*m, std::move(e.samples), run,
                    fmt::format("{} of cell {}", plan.repeats > 1 ? what : "the command", plan.label(cell)));
    }
    if (!missing.empty()) break;
  }
  // The ncu metrics: one more invocation under the profiler, only when the timed ones counted.
  if (profile && run.reason.empty() && missing.empty()) {
    if (auto p = profile_cell(cell_metrics, run.command, spec_for(plan, &cell, run.command), executor, run.samples);
        !p.empty())
      run.profiles = std::move(p);
  }
  run.finished = utc_now();
  run.command_s = command_seconds(run);
  if (auto t = throttled(run.invocations); !t.empty()) run.throttled = std::move(t);
  finish(plan, run, missing);
  return run;
}

Run run_from_values(const plan::Plan& plan, const plan::Cell& cell, const std::optional<std::string>& output,
                    const std::map<std::string, std::vector<double>>& values, std::string source) {
  Run run;
  run.id = new_measurement_id();
  run.cell = cell;
  run.command = plan::substitute(plan, cell, plan.command, true);
  run.source = std::move(source);
  run.started = run.finished = utc_now();
  std::vector<std::string> missing;
  std::map<std::string, metrics::Extraction> extracted;
  if (output) extracted = metrics::extract_all(plan::metrics_for(plan, cell), *output);
  for (const auto& m : plan.metrics) {
    if (auto v = values.find(m.name); v != values.end()) {
      run.samples[m.name] = v->second;
    } else if (auto e = extracted.find(m.name); e != extracted.end() && e->second.ok()) {
      add_samples(m, e->second.samples, run, "the --record file for cell " + plan.label(cell));
    } else if (e != extracted.end()) {
      missing.push_back(e->second.error);
    } else if (m.source == plan::Source::ncu) {
      continue;  // read by profiling, which a record or --metric has no part in: absent unless given
    } else {
      missing.push_back(
          fmt::format("metric '{}': no value given (use --metric {}=VALUE or --record FILE)", m.name, m.name));
    }
  }
  finish(plan, run, missing);
  return run;
}

}  // namespace abtrack::runner
