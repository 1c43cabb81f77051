#include "record/record.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "stats/quantile.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace abtrack::record {
namespace {

using ojson = nlohmann::ordered_json;

// A JSON number, or null for values JSON cannot hold (inf bounds of an unbounded CI).
ojson num(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }
ojson opt(const std::optional<double>& v) { return v ? num(*v) : ojson(nullptr); }
template <class T>
ojson opt_int(const std::optional<T>& v) {
  return v ? ojson(*v) : ojson(nullptr);
}

// Integers written as plain digits become JSON numbers; anything else stays a string, so a
// value reads back as exactly the text the plan had.
ojson scalar(const std::string& s) {
  auto n = util::plain_integer(s);
  return n ? ojson(*n) : ojson(s);
}

// Only what applies: a local run with a GPU has no job id, a Slurm task names its node.
ojson placement_json(const runner::Placement& p) {
  ojson j{{"executor", p.executor}};
  if (!p.gpu.empty()) j["gpu"] = p.gpu;
  if (!p.job_id.empty()) j["job_id"] = p.job_id;
  if (p.array_index) j["array_index"] = *p.array_index;
  if (!p.node.empty()) j["node"] = p.node;
  return j;
}

double num_or(const ojson& j, const char* key, double otherwise) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : otherwise;
}

// A watched quantity, to a thousandth (mW, for power in W); a whole number without a fraction.
ojson watched(double v) {
  if (!std::isfinite(v)) return nullptr;
  double r = std::round(v * 1000) / 1000;
  return r == std::floor(r) && std::fabs(r) < 1e15 ? ojson(static_cast<std::int64_t>(r)) : ojson(r);
}

// The watcher's [min, median, max] fields of a GPU, by their record keys.
const std::pair<const char*, std::optional<runner::Range> runner::GpuWatch::*> kWatchRanges[] = {
    {"sm_clock_mhz", &runner::GpuWatch::sm_clock_mhz},
    {"mem_clock_mhz", &runner::GpuWatch::mem_clock_mhz},
    {"power_w", &runner::GpuWatch::power_w},
    {"power_limit_w", &runner::GpuWatch::power_limit_w},
    {"temperature_c", &runner::GpuWatch::temperature_c},
    {"gpu_util_pct", &runner::GpuWatch::gpu_util_pct},
    {"mem_util_pct", &runner::GpuWatch::mem_util_pct}};

// The watcher's view of one invocation: min/median/max as [min, median, max].
ojson watch_json(const runner::Watch& w) {
  if (!w.nvml) return ojson{{"nvml", false}, {"reason", w.reason}};
  ojson gpus = ojson::array();
  for (const auto& g : w.gpus) {
    ojson j{{"index", g.index}, {"uuid", g.uuid}, {"samples", g.samples}, {"busy", g.busy}};
    auto range = [&](const char* key, const std::optional<runner::Range>& r) {
      j[key] = r ? ojson::array({watched(r->min), watched(r->median), watched(r->max)}) : ojson(nullptr);
    };
    for (const auto& [key, member] : kWatchRanges) range(key, g.*member);
    j["busy_sm_clock_mhz"] = g.busy_sm_clock_mhz ? watched(*g.busy_sm_clock_mhz) : ojson(nullptr);
    j["busy_mem_clock_mhz"] = g.busy_mem_clock_mhz ? watched(*g.busy_mem_clock_mhz) : ojson(nullptr);
    j["busy_power_w"] = g.busy_power_w ? watched(*g.busy_power_w) : ojson(nullptr);
    j["busy_gpu_util_pct"] = g.busy_gpu_util_pct ? watched(*g.busy_gpu_util_pct) : ojson(nullptr);
    j["throttle"] = g.throttle;
    gpus.push_back(std::move(j));
  }
  return ojson{{"nvml", true}, {"interval_ms", watched(w.interval_ms)}, {"gpus", gpus}};
}

runner::Watch parse_watch(const ojson& j) {
  runner::Watch w;
  w.nvml = j.value("nvml", false);
  w.reason = j.value("reason", "");
  w.interval_ms = num_or(j, "interval_ms", 0);
  for (const auto& gj : j.value("gpus", ojson::array())) {
    if (!gj.is_object()) continue;
    runner::GpuWatch g;
    g.index = gj.value("index", 0u);
    g.uuid = gj.value("uuid", "");
    g.samples = gj.value("samples", 0);
    g.busy = gj.value("busy", 0);
    auto range = [&](const char* key, std::optional<runner::Range>& r) {
      if (!gj.contains(key) || !gj[key].is_array() || gj[key].size() != 3) return;
      const auto& a = gj[key];
      if (a[0].is_number() && a[1].is_number() && a[2].is_number())
        r = runner::Range{a[0].get<double>(), a[1].get<double>(), a[2].get<double>()};
    };
    for (const auto& [key, member] : kWatchRanges) range(key, g.*member);
    if (gj.contains("busy_sm_clock_mhz") && gj["busy_sm_clock_mhz"].is_number())
      g.busy_sm_clock_mhz = gj["busy_sm_clock_mhz"].get<double>();
    if (gj.contains("busy_mem_clock_mhz") && gj["busy_mem_clock_mhz"].is_number())
      g.busy_mem_clock_mhz = gj["busy_mem_clock_mhz"].get<double>();
    if (gj.contains("busy_power_w") && gj["busy_power_w"].is_number())
      g.busy_power_w = gj["busy_power_w"].get<double>();
    if (gj.contains("busy_gpu_util_pct") && gj["busy_gpu_util_pct"].is_number())
      g.busy_gpu_util_pct = gj["busy_gpu_util_pct"].get<double>();
    for (const auto& t : gj.value("throttle", ojson::array()))
      if (t.is_string()) g.throttle.push_back(t.get<std::string>());
    w.gpus.push_back(std::move(g));
  }
  return w;
}

ojson invocation_json(const runner::Invocation& inv) {
  ojson j{{"command", inv.command},           {"exit_code", opt_int(inv.exit_code)}, {"signal", opt_int(inv.signal)},
          {"timed_out", inv.timed_out},       {"duration_s", inv.duration_s},        {"stdout_bytes", inv.stdout_bytes},
          {"stderr_bytes", inv.stderr_bytes}, {"stdout_tail", inv.stdout_tail},      {"stderr_tail", inv.stderr_tail}};
  if (inv.watch) j["watch"] = watch_json(*inv.watch);
  return j;
}

runner::Invocation parse_invocation(const ojson& j) {
  runner::Invocation inv;
  inv.command = j.value("command", "");
  if (j.contains("exit_code") && j["exit_code"].is_number_integer()) inv.exit_code = j["exit_code"].get<int>();
  if (j.contains("signal") && j["signal"].is_number_integer()) inv.signal = j["signal"].get<int>();
  inv.timed_out = j.value("timed_out", false);
  inv.duration_s = j.value("duration_s", 0.0);
  inv.stdout_bytes = j.value("stdout_bytes", std::uint64_t{0});
  inv.stderr_bytes = j.value("stderr_bytes", std::uint64_t{0});
  inv.stdout_tail = j.value("stdout_tail", "");
  inv.stderr_tail = j.value("stderr_tail", "");
  if (j.contains("watch") && j["watch"].is_object()) inv.watch = parse_watch(j["watch"]);
  return inv;
}

ojson interval(const stats::Interval& i) { return ojson::array({num(i.lo), num(i.hi)}); }

ojson comparison_json(const Comparison& c) {
  ojson metrics = ojson::object();
  for (const auto& m : c.metrics) {
    const auto& r = m.result;
    metrics[m.metric] = ojson{{"better", stats::to_string(r.options.better)},
                              {"n_baseline", r.n_a},
                              {"n", r.n_b},
                              {"baseline_median", num(r.median_a)},
                              {"median", num(r.median_b)},
                              {"delta_pct", num(r.delta_pct)},
                              {"delta_ci_pct", interval(r.delta_ci_pct)},
                              {"p_value", opt(r.p_value)},
                              {"verdict", stats::to_string(r.verdict)},
                              {"exact", r.exact},
                              {"delta_abs", r.absolute ? num(r.delta_abs) : ojson(nullptr)},
                              {"delta_abs_ci", r.absolute ? interval(r.delta_abs_ci) : ojson(nullptr)},
                              {"notes", r.notes}};
    if (r.analysis == "paired") {  // which analysis, on what basis, and the variance components behind it
      auto& j = metrics[m.metric];
      j["analysis"] = r.analysis;
      j["pairs"] = r.pairs;
      j["basis"] = r.basis;
      j["df"] = num(r.df);
      j["sigma_within_pct"] = num(r.sigma_within_pct);
      j["sigma_between_pct"] = num(r.sigma_between_pct);
    }
  }
  return ojson{
      {"baseline_run", c.baseline_run}, {"baseline_cell", c.baseline_cell}, {"metrics", metrics}, {"notes", c.notes}};
}

stats::Interval parse_interval(const ojson& j, const char* key) {
  stats::Interval i;
  if (j.contains(key) && j[key].is_array() && j[key].size() == 2) {
    if (j[key][0].is_number()) i.lo = j[key][0].get<double>();
    if (j[key][1].is_number()) i.hi = j[key][1].get<double>();
  }
  return i;
}

// comparison_json's metric entry, back; what it does not name keeps its default.
stats::Comparison parse_metric_comparison(const ojson& m) {
  stats::Comparison r;
  if (m.value("better", "") == "higher") r.options.better = stats::Better::higher;
  r.n_a = m.contains("n_baseline") && m["n_baseline"].is_number_unsigned() ? m["n_baseline"].get<std::size_t>() : 0;
  r.n_b = m.contains("n") && m["n"].is_number_unsigned() ? m["n"].get<std::size_t>() : 0;
  r.median_a = num_or(m, "baseline_median", std::nan(""));
  r.median_b = num_or(m, "median", std::nan(""));
  r.delta_pct = num_or(m, "delta_pct", std::nan(""));
  r.delta_ci_pct = parse_interval(m, "delta_ci_pct");
  if (m.contains("p_value") && m["p_value"].is_number()) r.p_value = m["p_value"].get<double>();
  const std::string verdict = m.value("verdict", "");
  for (auto v : {stats::Verdict::inconclusive, stats::Verdict::better, stats::Verdict::worse,
                 stats::Verdict::equivalent, stats::Verdict::same})
    if (verdict == stats::to_string(v)) r.verdict = v;
  r.exact = m.value("exact", false);
  r.absolute = m.contains("delta_abs") && m["delta_abs"].is_number();
  if (r.absolute) {
    r.delta_abs = m["delta_abs"].get<double>();
    r.delta_abs_ci = parse_interval(m, "delta_abs_ci");
  }
  if (m.value("analysis", "") == "paired") {
    r.analysis = "paired";
    r.pairs = m.contains("pairs") && m["pairs"].is_number_unsigned() ? m["pairs"].get<std::size_t>() : 0;
    r.basis = m.value("basis", "");
    r.df = num_or(m, "df", 0);
    r.sigma_within_pct = num_or(m, "sigma_within_pct", std::nan(""));
    r.sigma_between_pct = num_or(m, "sigma_between_pct", std::nan(""));
  }
  if (m.contains("notes") && m["notes"].is_array())
    for (const auto& n : m["notes"])
      if (n.is_string()) r.notes.push_back(n.get<std::string>());
  return r;
}

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw Error(Exit::environment, Location{name, 0, 0}, "malformed run record: " + what,
              "restore it from git (git checkout -- FILE) or remove the commit that added it");
}

}  // namespace

std::string Code::trailer() const {
  std::string head = commit.empty() ? "unborn" : commit;
  if (unknown()) return head + " +dirty";
  return snapshot.empty() ? head : head + " +snapshot " + snapshot;
}

std::string Code::short_name() const {
  std::string head = commit.empty() ? "unborn" : commit.substr(0, 12);
  if (unknown()) return head + " +dirty";
  return snapshot.empty() ? head : head + " +snapshot " + snapshot.substr(0, 12);
}

std::string Record::label() const {
  std::string out;
  for (const auto& [k, v] : cell) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

std::string record_path(const std::string& experiment, int run) {
  return fmt::format("runs/{}/{:04d}.json", experiment, run);
}

std::optional<int> run_number_of(std::string_view name) {
  if (!name.ends_with(".json")) return std::nullopt;
  name.remove_suffix(5);
  if (name.size() < 4 || name.size() > 9) return std::nullopt;
  int n = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  // "0007" is run 7; "00007" is not a name abtrack writes.
  if (name.size() > 4 && name[0] == '0') return std::nullopt;
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

CellValues cell_values(const plan::Plan& plan, const plan::Cell& cell) {
  CellValues out;
  for (std::size_t i = 0; i < plan.axes.size(); ++i) out.emplace_back(plan.axes[i].name, cell.values[i]);
  return out;
}

std::optional<plan::Cell> plan_cell(const plan::Plan& plan, const CellValues& values) {
  if (values.size() != plan.axes.size()) return std::nullopt;
  plan::Cell c;
  for (const auto& axis : plan.axes) {
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == axis.name; });
    if (it == values.end()) return std::nullopt;
    if (std::find(axis.values.begin(), axis.values.end(), it->second) == axis.values.end()) return std::nullopt;
    c.values.push_back(it->second);
  }
  return c;
}

namespace {

ojson build_json(const Build& b) {
  return ojson{{"command", b.command},
               {"seconds", b.seconds},
               {"finished", b.finished},
               {"log", b.log},
               {"toolchain", b.toolchain}};
}

Build build_of(const ojson& j) {
  Build b;
  b.command = j.value("command", "");
  b.seconds = j.value("seconds", 0.0);
  b.finished = j.value("finished", "");
  b.log = j.value("log", "");
  if (j.contains("toolchain") && j["toolchain"].is_array())
    for (const auto& t : j["toolchain"])
      if (t.is_string()) b.toolchain.push_back(t);
  return b;
}

ojson cuda_json(const runner::CudaFacts& f) {
  if (!f.cuda()) return ojson{{"kind", "none"}, {"note", "not a CUDA binary"}};
  ojson kernels = ojson::array();
  for (const auto& k : f.kernels) {
    ojson sass = ojson::object();
    for (const auto& [cls, n] : k.sass) sass[cls] = n;
    kernels.push_back(ojson{{"name", k.name},
                            {"arch", k.arch},
                            {"registers", opt_int(k.registers)},
                            {"shared_bytes", opt_int(k.shared_bytes)},
                            {"local_bytes", opt_int(k.local_bytes)},
                            {"stack_bytes", opt_int(k.stack_bytes)},
                            {"spill_store_bytes", opt_int(k.spill_store_bytes)},
                            {"spill_load_bytes", opt_int(k.spill_load_bytes)},
                            {"sass", sass}});
  }
  return ojson{{"kind", f.kind},
               {"kernels", kernels},
               {"kernels_left_out", f.kernels_left_out},
               {"build_log", f.build_log.empty() ? ojson(nullptr) : ojson(f.build_log)},
               {"spill_warnings", f.spill_warnings},
               {"error", f.error.empty() ? ojson(nullptr) : ojson(f.error)}};
}

runner::CudaFacts cuda_of(const ojson& j) {
  runner::CudaFacts f;
  f.kind = j.value("kind", "none");
  auto i64 = [](const ojson& o, const char* k) -> std::optional<std::int64_t> {
    return o.contains(k) && o[k].is_number_integer() ? std::optional(o[k].get<std::int64_t>()) : std::nullopt;
  };
  for (const auto& k : j.value("kernels", ojson::array())) {
    if (!k.is_object()) continue;
    metrics::KernelFacts kf;
    kf.name = k.value("name", "");
    kf.arch = k.value("arch", "");
    kf.registers = i64(k, "registers");
    kf.shared_bytes = i64(k, "shared_bytes");
    kf.local_bytes = i64(k, "local_bytes");
    kf.stack_bytes = i64(k, "stack_bytes");
    kf.spill_store_bytes = i64(k, "spill_store_bytes");
    kf.spill_load_bytes = i64(k, "spill_load_bytes");
    if (k.contains("sass") && k["sass"].is_object())
      for (const auto& [cls, n] : k["sass"].items())
        if (n.is_number_integer()) kf.sass[cls] = n.get<std::int64_t>();
    f.kernels.push_back(std::move(kf));
  }
  f.kernels_left_out = j.value("kernels_left_out", std::size_t{0});
  if (j.contains("build_log") && j["build_log"].is_string()) f.build_log = j["build_log"];
  for (const auto& w : j.value("spill_warnings", ojson::array()))
    if (w.is_string()) f.spill_warnings.push_back(w);
  if (j.contains("error") && j["error"].is_string()) f.error = j["error"];
  return f;
}

ojson profile_json(const runner::Profile& p) {
  ojson units = ojson::object();
  for (const auto& [metric, unit] : p.units) units[metric] = unit;
  return ojson{{"command", p.command.empty() ? ojson(nullptr) : ojson(p.command)},
               {"kernel", p.kernel.empty() ? ojson(nullptr) : ojson(p.kernel)},
               {"launch", p.launch},
               {"metrics", p.metrics},
               {"status", p.status},
               {"message", p.message},
               {"exit_code", opt_int(p.exit_code)},
               {"duration_s", num(p.duration_s)},
               {"kernels", p.kernels},
               {"units", units}};
}

runner::Profile profile_of(const ojson& j) {
  runner::Profile p;
  if (j.contains("command") && j["command"].is_string()) p.command = j["command"];
  if (j.contains("kernel") && j["kernel"].is_string()) p.kernel = j["kernel"];
  p.launch = j.value("launch", 0);
  for (const auto& m : j.value("metrics", ojson::array()))
    if (m.is_string()) p.metrics.push_back(m);
  p.status = j.value("status", "ok");
  p.message = j.value("message", "");
  if (j.contains("exit_code") && j["exit_code"].is_number_integer()) p.exit_code = j["exit_code"].get<int>();
  p.duration_s = num_or(j, "duration_s", 0);
  for (const auto& k : j.value("kernels", ojson::array()))
    if (k.is_string()) p.kernels.push_back(k);
  if (j.contains("units") && j["units"].is_object())
    for (const auto& [metric, unit] : j["units"].items())
      if (unit.is_string()) p.units.emplace_back(metric, unit.get<std::string>());
  return p;
}

}  // namespace

std::string cuda_facts_to_json(const runner::CudaFacts& f) { return cuda_json(f).dump(); }

Expected<runner::CudaFacts> parse_cuda_facts(std::string_view text) {
  auto j = ojson::parse(text, nullptr, false);
  if (!j.is_object()) return Failure("not a JSON object");
  // nlohmann reports a mistyped field only by throwing.
  try {
    return cuda_of(j);
  } catch (const ojson::exception& e) {
    return Failure(e.what());
  }
}

std::string build_to_json(const Build& b) { return build_json(b).dump(2) + "\n"; }

std::optional<Build> parse_build(std::string_view text) {
  auto j = ojson::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return build_of(j);
}

namespace {

// The record's metrics: per metric (plan order, then any other) its spec, samples, warm-up
// samples and summary.
ojson metrics_json(const Record& r) {
  // Plan order when the plan is known, then any other metric.
  std::vector<std::string> order;
  for (const auto& m : r.metric_specs)
    if (r.data.samples.count(m.name)) order.push_back(m.name);
  for (const auto& [name, samples] : r.data.samples)
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  ojson metrics = ojson::object();
  for (const auto& name : order) {
    const auto& samples = r.data.samples.at(name);
    ojson summary{{"n", samples.size()}};
    if (!samples.empty()) {
      double sum = 0;
      for (double v : samples) sum += v;
      summary["median"] = num(stats::median(samples));
      summary["ci95"] = interval(stats::median_ci(samples, 0.95));
      summary["min"] = num(*std::min_element(samples.begin(), samples.end()));
      summary["max"] = num(*std::max_element(samples.begin(), samples.end()));
      summary["mean"] = num(sum / static_cast<double>(samples.size()));
    }
    ojson samples_json = ojson::array();
    for (double v : samples) samples_json.push_back(num(v));
    ojson entry = ojson::object();
    for (const auto& m : r.metric_specs) {
      if (m.name != name) continue;
      entry["source"] = plan::to_string(m.source);
      entry["selector"] = m.selector;
      if (!m.filter.empty()) entry[m.source == plan::Source::nvbench ? "state" : "name"] = m.filter;
      if (m.source == plan::Source::ncu) {
        entry["kernel"] = m.kernel.empty() ? ojson(nullptr) : ojson(m.kernel);
        entry["launch"] = m.launch;
      }
      entry["file"] = m.file.empty() ? ojson(nullptr) : ojson(m.file);
      entry["scale"] = num(m.scale);
      if (!m.unit.empty()) entry["unit"] = m.unit;
      if (m.better != plan::Better::none) entry["better"] = plan::to_string(m.better);
    }
    entry["samples"] = samples_json;
    if (auto w = r.data.warmup.or_empty().find(name); w != r.data.warmup.or_empty().end()) {
      for (const auto& m : r.metric_specs)
        if (m.name == name) entry["warmup"] = m.warmup;
      ojson dropped = ojson::array();
      for (double v : w->second) dropped.push_back(num(v));
      entry["warmup_samples"] = dropped;
    }
    entry["summary"] = summary;
    metrics[name] = entry;
  }
  return metrics;
}

ojson env_json(const runner::Environment& e) {
  ojson gpus = ojson::array();
  for (const auto& g : e.gpus) {
    gpus.push_back(ojson{{"name", g.name},
                         {"uuid", g.uuid},
                         {"driver", g.driver},
                         {"sm_clock_mhz", opt_int(g.sm_clock_mhz)},
                         {"mem_clock_mhz", opt_int(g.mem_clock_mhz)},
                         {"power_limit_w", opt(g.power_limit_w)},
                         {"temperature_c", opt_int(g.temperature_c)}});
    if (!g.clocks_from.empty()) gpus.back()["clocks_from"] = g.clocks_from;
  }
  ojson env{{"host", e.host},         {"os", e.os},   {"cpu", e.cpu},       {"cpus", e.cpus},
            {"compiler", e.compiler}, {"gpus", gpus}, {"driver", e.driver}, {"cuda", e.cuda}};
  return env;
}

}  // namespace

std::string to_json(const Record& r) {
  ojson cell = ojson::object();
  for (const auto& [k, v] : r.cell) cell[k] = scalar(v);
  ojson metrics = metrics_json(r);
  ojson gates = ojson::array();
  for (const auto& g : r.data.gates)
    gates.push_back(ojson{{"expression", g.expression},
                          {"metric", g.metric},
                          {"evaluated", g.evaluated},
                          {"holds", g.holds},
                          {"worst", opt(g.worst)},
                          {"violations", g.violations}});
  ojson invocations = ojson::array();
  for (const auto& inv : r.data.invocations) invocations.push_back(invocation_json(inv));
  ojson env = env_json(r.env);
  ojson artifacts = ojson::array();
  for (const auto& a : r.artifacts)
    artifacts.push_back(ojson{{"path", a.path},
                              {"sha256", a.sha256.empty() ? ojson(nullptr) : ojson(a.sha256)},
                              {"bytes", a.sha256.empty() ? ojson(nullptr) : ojson(a.bytes)},
                              {"missing", a.sha256.empty()},
                              {"cuda", a.cuda ? cuda_json(*a.cuda) : ojson(nullptr)}});
  ojson j{{"schema", kSchema},
          {"experiment", r.experiment},
          {"run", r.run},
          {"measurement", r.data.id},
          {"cell", cell},
          {"command", r.data.command},
          {"source", r.data.source},
          {"started", r.data.started},
          {"finished", r.data.finished},
          {"outcome", runner::to_string(r.data.outcome)},
          {"reason", r.data.reason},
          {"setup", r.data.setup ? invocation_json(*r.data.setup) : ojson(nullptr)},
          {"invocations", invocations},
          {"metrics", metrics},
          {"gates", gates},
          {"profiles", ojson::array()},
          {"comparison", r.comparison ? comparison_json(*r.comparison) : ojson(nullptr)},
          {"schedule",
           r.data.schedule
               ? ojson{{"round", r.data.schedule->round},
                       {"rounds", r.data.schedule->rounds},
                       {"seed", r.data.schedule->seed},
                       {"position", r.data.schedule->position},
                       {"batch", r.data.schedule->batch.empty() ? ojson(nullptr) : ojson(r.data.schedule->batch)},
                       {"design", r.data.schedule->sequential ? "auto" : "fixed"}}
               : ojson(nullptr)},
          {"placement", r.data.placement ? placement_json(*r.data.placement) : ojson(nullptr)},
          {"code", ojson{{"commit", r.code.commit.empty() ? ojson(nullptr) : ojson(r.code.commit)},
                         {"dirty", r.code.dirty},
                         {"snapshot", r.code.snapshot.empty() ? ojson(nullptr) : ojson(r.code.snapshot)},
                         {"tree", r.code.tree.empty() ? ojson(nullptr) : ojson(r.code.tree)},
                         {"recipe", r.code.recipe.empty() ? ojson(nullptr) : ojson(r.code.recipe)},
                         {"revision", r.code.revision.empty() ? ojson(nullptr) : ojson(r.code.revision)}}},
          {"build", r.build ? build_json(*r.build) : ojson(nullptr)},
          {"doc", r.doc.empty() ? ojson(nullptr) : ojson(r.doc)},
          {"env", env},
          {"artifacts", artifacts},
          {"abtrack_version", r.abtrack_version.empty() ? std::string(version()) : r.abtrack_version},
          {"plan_sha256", r.plan_sha256}};
  if (!r.build) j.erase("build");                               // a plan with revisions only
  if (r.data.profiles.or_empty().empty()) j.erase("profiles");  // a plan with ncu: metrics only
  for (const auto& p : r.data.profiles.or_empty()) j["profiles"].push_back(profile_json(p));
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// The record's `env` (schema 1's GPU names only, too).
runner::Environment environment_of(const ojson& e) {
  runner::Environment env;
  env.host = e.value("host", "");
  env.os = e.value("os", "");
  env.cpu = e.value("cpu", "");
  env.cpus = e.value("cpus", 0u);
  env.compiler = e.value("compiler", "");
  for (const auto& g : e.value("gpus", ojson::array())) {
    runner::Gpu gpu;
    auto u = [&](const char* k) -> std::optional<unsigned> {
      return g.contains(k) && g[k].is_number_unsigned() ? std::optional<unsigned>(g[k].get<unsigned>()) : std::nullopt;
    };
    if (g.is_string()) {  // schema 1 before the fingerprint: names only
      gpu.name = g.get<std::string>();
    } else if (g.is_object()) {
      gpu.name = g.value("name", "");
      gpu.uuid = g.value("uuid", "");
      gpu.driver = g.value("driver", "");
      gpu.sm_clock_mhz = u("sm_clock_mhz");
      gpu.mem_clock_mhz = u("mem_clock_mhz");
      if (g.contains("power_limit_w") && g["power_limit_w"].is_number())
        gpu.power_limit_w = g["power_limit_w"].get<double>();
      gpu.temperature_c = u("temperature_c");
      gpu.clocks_from = g.value("clocks_from", "");
    }
    env.gpus.push_back(std::move(gpu));
  }
  env.driver = e.value("driver", "");
  env.cuda = e.value("cuda", "");
  return env;
}

}  // namespace

Record parse_record(std::string_view text, const std::string& name) {
  auto j = ojson::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad(name, "not a JSON object");
  Record r;
  try {
    if (j.value("schema", 0) != kSchema) bad(name, fmt::format("schema {} is not {}", j.value("schema", 0), kSchema));
    r.experiment = j.at("experiment").get<std::string>();
    r.run = j.at("run").get<int>();
    for (const auto& [k, v] : j.at("cell").items())
      r.cell.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    r.data.id = j.value("measurement", "");
    r.data.command = j.value("command", "");
    r.data.source = j.value("source", "command");
    r.data.started = j.value("started", "");
    r.data.finished = j.value("finished", "");
    std::string outcome = j.at("outcome").get<std::string>();
    r.data.outcome = outcome == "pass"   ? runner::Outcome::pass
                     : outcome == "fail" ? runner::Outcome::fail
                                         : runner::Outcome::invalid;
    r.data.reason = j.value("reason", "");
    if (j.contains("setup") && j["setup"].is_object()) r.data.setup = parse_invocation(j["setup"]);
    for (const auto& inv : j.value("invocations", ojson::array())) r.data.invocations.push_back(parse_invocation(inv));
    for (const auto& p : j.value("profiles", ojson::array()))
      if (p.is_object()) r.data.profiles.ensure().push_back(profile_of(p));
    if (auto t = runner::throttled(r.data.invocations); !t.empty()) r.data.throttled = std::move(t);
    r.data.command_s = runner::command_seconds(r.data);
    for (const auto& [k, v] : j.at("metrics").items()) {
      auto& dst = r.data.samples[k];
      for (const auto& s : v.at("samples")) dst.push_back(s.is_number() ? s.get<double>() : std::nan(""));
      if (v.contains("warmup_samples") && v["warmup_samples"].is_array()) {
        auto& w = r.data.warmup.ensure()[k];
        for (const auto& s : v["warmup_samples"]) w.push_back(s.is_number() ? s.get<double>() : std::nan(""));
      }
    }
    for (const auto& g : j.value("gates", ojson::array())) {
      gates::GateResult gr;
      gr.expression = g.value("expression", "");
      gr.metric = g.value("metric", "");
      gr.evaluated = g.value("evaluated", false);
      gr.holds = g.value("holds", false);
      if (g.contains("worst") && g["worst"].is_number()) gr.worst = g["worst"].get<double>();
      gr.violations = g.value("violations", std::size_t{0});
      r.data.gates.push_back(std::move(gr));
    }
    if (j.contains("schedule") && j["schedule"].is_object()) {
      const auto& sj = j["schedule"];
      r.data.schedule =
          runner::Schedule{sj.value("round", 1),
                           sj.value("rounds", 1),
                           sj.value("seed", std::uint64_t{0}),
                           sj.value("position", 1),
                           sj.contains("batch") && sj["batch"].is_string() ? sj["batch"].get<std::string>() : "",
                           sj.value("design", "fixed") == "auto"};
    }
    if (j.contains("placement") && j["placement"].is_object()) {
      const auto& pj = j["placement"];
      runner::Placement p;
      p.executor = pj.value("executor", "local");
      p.gpu = pj.value("gpu", "");
      p.job_id = pj.value("job_id", "");
      if (pj.contains("array_index") && pj["array_index"].is_number_integer())
        p.array_index = pj["array_index"].get<int>();
      p.node = pj.value("node", "");
      r.data.placement = p;
    }
    const auto& code = j.at("code");
    if (code.contains("commit") && code["commit"].is_string()) r.code.commit = code["commit"];
    r.code.dirty = code.value("dirty", false);
    if (code.contains("snapshot") && code["snapshot"].is_string()) r.code.snapshot = code["snapshot"];
    if (code.contains("tree") && code["tree"].is_string()) r.code.tree = code["tree"];
    if (code.contains("recipe") && code["recipe"].is_string()) r.code.recipe = code["recipe"];
    if (code.contains("revision") && code["revision"].is_string()) r.code.revision = code["revision"];
    if (j.contains("doc") && j["doc"].is_string()) r.doc = j["doc"];
    if (j.contains("build") && j["build"].is_object()) r.build = build_of(j["build"]);
    if (j.contains("env") && j["env"].is_object()) r.env = environment_of(j["env"]);
    for (const auto& a : j.value("artifacts", ojson::array())) {
      if (!a.is_object()) continue;
      Artifact art;
      art.path = a.value("path", "");
      if (a.contains("sha256") && a["sha256"].is_string()) art.sha256 = a["sha256"].get<std::string>();
      art.bytes = a.contains("bytes") && a["bytes"].is_number_unsigned() ? a["bytes"].get<std::uint64_t>() : 0;
      if (a.contains("cuda") && a["cuda"].is_object()) art.cuda = cuda_of(a["cuda"]);
      r.artifacts.push_back(std::move(art));
    }
    r.plan_sha256 = j.value("plan_sha256", "");
    r.abtrack_version = j.value("abtrack_version", "");
    if (j.contains("comparison") && j["comparison"].is_object()) {
      Comparison c;
      c.baseline_run = j["comparison"].value("baseline_run", 0);
      c.baseline_cell = j["comparison"].value("baseline_cell", "");
      // The run's own comparison (the document recomputes its own from the pools); per-run
      // export shows this one.
      if (j["comparison"].contains("metrics") && j["comparison"]["metrics"].is_object())
        for (const auto& [metric, m] : j["comparison"]["metrics"].items())
          if (m.is_object()) c.metrics.push_back(MetricComparison{metric, parse_metric_comparison(m)});
      r.comparison = c;
    }
  } catch (const ojson::exception& e) {
    bad(name, e.what());
  }
  return r;
}

std::optional<std::string> document_named(std::string_view text) {
  auto j = ojson::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("doc") || !j["doc"].is_string()) return std::nullopt;
  return j["doc"].get<std::string>();
}

}  // namespace abtrack::record
