// The plan keys that say what is read and judged: metrics, warm-up, gates, prediction, model.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "plan/load.hpp"
#include "plan/loader.hpp"
#include "util/files.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace abtrack::plan {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMetricKeys = {"json",   "regex", "hyperfine", "gbench", "nvbench",
                                              "ncu",    "file",  "name",      "state",  "kernel",
                                              "launch", "scale", "better",    "unit",   "warmup"};

const std::vector<std::pair<std::string, Source>> kMetricSources = {
    {"json", Source::json},     {"regex", Source::regex},     {"hyperfine", Source::hyperfine},
    {"gbench", Source::gbench}, {"nvbench", Source::nvbench}, {"ncu", Source::ncu}};

const std::vector<std::string> kHyperfineFields = {"mean", "median", "min", "max", "stddev", "times"};

const std::vector<std::string> kPredictionKeys = {"metric", "change", "range"};

// "metric OP number" -> (metric, op, number text), blanks allowed around each part.
std::optional<std::tuple<std::string, Op, std::string>> parse_gate(std::string_view text) {
  text = util::trim(text);
  std::size_t i = 0;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
  std::string name(text.substr(0, i));
  if (!util::is_identifier(name)) return std::nullopt;
  auto rest = util::trim(text.substr(i));
  static const std::pair<std::string_view, Op> ops[] = {{"<=", Op::le}, {">=", Op::ge}, {"==", Op::eq},
                                                        {"!=", Op::ne}, {"<", Op::lt},  {">", Op::gt}};
  for (const auto& [sym, op] : ops) {
    if (!rest.starts_with(sym)) continue;
    auto number = util::trim(rest.substr(sym.size()));
    if (number.empty() || number.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
    return std::tuple{name, op, std::string(number)};
  }
  return std::nullopt;
}

}  // namespace

void Loader::load_metrics(const YAML::Node& n, Plan& plan) {
  if (!n.IsMap() || n.size() == 0) {
    error(at(n.Mark()), "metrics must be a non-empty mapping of metric names to how to read them",
          "e.g. metrics: {time_us: {json: samples_us, better: lower}}");
    return;
  }
  for (auto& [k, v] : ordered(n, "metric")) {
    Metric m;
    m.name = k.Scalar();
    m.where = at(k.Mark());
    if (!util::is_identifier(m.name)) {
      error(at(k.Mark()),
            fmt::format("metric name '{}' must be a letter or '_' followed by letters, digits or '_'", m.name));
      continue;
    }
    if (!v.IsMap()) {
      error(at(v.Mark()),
            fmt::format("metric '{}' must be a mapping, e.g. {{json: median_us}} or {{regex: 'time: ([0-9.]+)'}}",
                        m.name));
      continue;
    }
    auto keys = mapping(v, kMetricKeys, "metric key");
    // The metric is kept even when its source is wrong, so gates naming it do not add noise.
    load_metric_source(m, v, keys, plan);
    if (m.source == Source::ncu && ncu_set(m.selector)) {
      expand_ncu_set(m, keys, plan);
      continue;
    }
    if (auto it = keys.find("better"); it != keys.end()) {
      auto b = scalar(it->second.second, "better");
      if (b == "lower") m.better = Better::lower;
      else if (b == "higher") m.better = Better::higher;
      else if (b)
        error(at(it->second.second.Mark()), fmt::format("better must be 'lower' or 'higher', not '{}'{}", *b,
                                                        util::suggestion_suffix(*b, {"lower", "higher"})));
    }
    if (auto it = keys.find("unit"); it != keys.end()) m.unit = scalar(it->second.second, "unit").value_or("");
    m.warmup = plan.warmup;
    m.warmup_where = m_warmup_where;
    if (auto it = keys.find("warmup"); it != keys.end())
      load_warmup(it->second.second, fmt::format("metric '{}': warmup", m.name), m.warmup, m.warmup_where);
    plan.metrics.push_back(std::move(m));
  }
}

void Loader::load_warmup(const YAML::Node& n, const std::string& what, int& field, Location& where) {
  auto v = number(n, what);
  if (v && !(*v >= 0 && *v <= 1e9 && std::floor(*v) == *v))
    error(at(n.Mark()), fmt::format("{} must be a whole number of samples, 0 or more, not {}", what, n.Scalar()),
          "the first N samples of every invocation are dropped as warm-up, e.g. warmup: 2");
  else if (v) {
    field = static_cast<int>(*v);
    where = at(n.Mark());
  }
}

bool Loader::load_ncu_keys(Metric& m, const YAML::Node& v, const KeyMap& keys, const Plan& plan) {
  bool ok = true;
  for (const char* k : {"kernel", "launch"}) {
    auto it = keys.find(k);
    if (it == keys.end() || m.source == Source::ncu) continue;
    error(at(it->second.first.Mark()),
          fmt::format("metric '{}': '{}' does not apply to '{}'", m.name, k, to_string(m.source)),
          "kernel: and launch: choose the kernel launch an ncu: metric profiles");
    ok = false;
  }
  if (m.source != Source::ncu) return ok;
  if (auto it = keys.find("kernel"); it != keys.end()) {
    const YAML::Node& n = it->second.second;
    auto f = scalar(n, fmt::format("metrics.{}.kernel", m.name));
    if (f && util::trim(*f).empty()) {
      error(at(n.Mark()), fmt::format("metric '{}' has an empty kernel regex", m.name),
            "leave kernel: out to profile the first launch of any kernel");
      ok = false;
    } else if (f) {
      Cell first;
      for (const auto& a : plan.axes) first.values.push_back(a.values.front());
      if (auto re = util::compile_regex(substitute_regex(plan, first, *f))) {
        m.kernel = *f;
      } else {
        error(at(n.Mark()), fmt::format("the kernel regex of metric '{}' does not compile: {}", m.name, re.error()),
              placeholder_hint(plan, *f));
        ok = false;
      }
    } else {
      ok = false;
    }
  }
  if (auto it = keys.find("launch"); it != keys.end()) {
    const YAML::Node& n = it->second.second;
    auto x = number(n, fmt::format("metrics.{}.launch", m.name));
    if (x && !(*x >= 0 && *x <= 1e9 && *x == std::floor(*x))) {
      error(at(n.Mark()), fmt::format("metric '{}': launch must be a whole number >= 0, not {}", m.name, n.Scalar()),
            "launch: 0 profiles the first launch of a matching kernel, launch: 1 the second, ...");
      ok = false;
    } else if (x) {
      m.launch = static_cast<int>(*x);
    } else {
      ok = false;
    }
  }
  (void)v;
  return ok;
}

void Loader::expand_ncu_set(const Metric& m, const KeyMap& keys, Plan& plan) {
  for (const char* k : {"better", "unit", "scale"})
    if (auto it = keys.find(k); it != keys.end())
      error(
          at(it->second.first.Mark()),
          fmt::format("metric '{}': '{}' does not apply to the ncu set '{}'", m.name, k, m.selector),
          fmt::format(
              "name the set's metrics one by one (e.g. {}_dram: {{ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, "
              "better: lower}}) to give them '{}'",
              m.name, k));
  for (const auto& e : *ncu_set(m.selector)) {
    Metric one = m;
    one.name = m.name + "_" + e.suffix;
    one.selector = e.metric;
    one.unit = e.unit;
    if (plan.metric(one.name)) {
      error(m.where,
            fmt::format("metric '{}' (from ncu: {}) is also defined elsewhere in the plan", one.name, m.selector),
            "rename one of them");
      continue;
    }
    plan.metrics.push_back(std::move(one));
  }
}

bool Loader::load_metric_source(Metric& m, const YAML::Node& v, const KeyMap& keys, const Plan& plan) {
  std::vector<const std::pair<std::string, Source>*> given;
  for (const auto& s : kMetricSources)
    if (keys.count(s.first)) given.push_back(&s);
  if (given.empty()) {
    error(at(v.Mark()),
          fmt::format("metric '{}' needs one of 'json', 'regex', 'hyperfine', 'gbench', 'nvbench' or 'ncu'", m.name),
          "e.g. {json: median_us}, {regex: 'time: ([0-9.]+)'} or {hyperfine: mean, file: hyperfine.json}");
    return false;
  }
  if (given.size() > 1) {
    for (std::size_t i = 1; i < given.size(); ++i)
      error(at(keys.at(given[i]->first).first.Mark()),
            fmt::format("metric '{}' has more than one source ('{}' and '{}'); give exactly one", m.name,
                        given[0]->first, given[i]->first));
    return false;
  }
  const std::string key = given[0]->first;
  m.source = given[0]->second;
  const YAML::Node& src = keys.at(key).second;
  auto sel = scalar(src, fmt::format("metrics.{}.{}", m.name, key));
  if (!sel) return false;
  m.selector = *sel;
  bool ok = check_selector(m, src);
  ok = load_ncu_keys(m, v, keys, plan) && ok;

  ok = load_metric_filter(m, keys, key, plan) && ok;
  if (m.source == Source::gbench && !keys.count("name")) {
    error(at(v.Mark()), fmt::format("metric '{}' needs 'name', a regex selecting the benchmark rows", m.name),
          "e.g. {gbench: real_time, name: '^BM_decode/64$'}");
    ok = false;
  }
  ok = load_file_and_scale(m, keys) && ok;
  return ok;
}

// `file:` (the output file a metric is read from) and `scale:` (a factor for its samples).
bool Loader::load_file_and_scale(Metric& m, const KeyMap& keys) {
  bool ok = true;
  if (auto it = keys.find("file"); it != keys.end()) {
    auto f = scalar(it->second.second, fmt::format("metrics.{}.file", m.name));
    if (m.source == Source::ncu) {
      error(at(it->second.first.Mark()), fmt::format("metric '{}': 'file' does not apply to 'ncu'", m.name),
            "an ncu metric is read from ncu's own output, in an extra invocation of the command under ncu");
      ok = false;
    } else if (f && util::trim(*f).empty()) {
      error(at(it->second.second.Mark()), fmt::format("metric '{}' has an empty file path", m.name));
      ok = false;
    } else if (f) {
      m.file = *f;
    } else {
      ok = false;
    }
  }
  if (auto it = keys.find("scale"); it != keys.end()) {
    const auto& n = it->second.second;
    auto x = number(n, fmt::format("metrics.{}.scale", m.name));
    if (x && !(std::isfinite(*x) && *x != 0)) {
      error(at(n.Mark()),
            fmt::format("metric '{}': scale must be a finite non-zero number, not {}", m.name, n.Scalar()),
            "e.g. scale: 1e6 turns seconds into microseconds");
      ok = false;
    } else if (x) {
      m.scale = *x;
    } else {
      ok = false;
    }
  }
  return ok;
}

std::vector<std::string> Loader::metric_names(const Plan& plan) const {
  std::vector<std::string> names;
  for (const auto& m : plan.metrics) names.push_back(m.name);
  return names;
}

void Loader::load_gates(const YAML::Node& n, Plan& plan) {
  if (!n.IsSequence()) {
    error(at(n.Mark()), "gates must be a list of expressions, e.g. gates: [rel_err <= 6.7e-3]");
    return;
  }
  for (const auto& g : n) {
    auto text = scalar(g, "a gate");
    if (!text) continue;
    auto parsed = parse_gate(*text);
    if (!parsed) {
      error(at(g.Mark()), fmt::format("gate '{}' is not 'metric OP number'", *text),
            "OP is one of <, <=, >, >=, ==, !=; e.g. rel_err <= 6.7e-3");
      continue;
    }
    auto [name, op, number] = *parsed;
    Gate gate{*text, name, op, 0, at(g.Mark())};
    auto v = util::parse_double(number);
    if (!v || !std::isfinite(*v)) {
      error(at(g.Mark()), fmt::format("gate '{}': '{}' is not a finite number", *text, number));
      continue;
    }
    gate.threshold = *v;
    if (!plan.metric(gate.metric)) {
      error(at(g.Mark()), fmt::format("gate '{}' names unknown metric '{}'{}", *text, gate.metric,
                                      util::suggestion_suffix(gate.metric, metric_names(plan))));
      continue;
    }
    plan.gates.push_back(std::move(gate));
  }
}

void Loader::load_prediction(const YAML::Node& n, Plan& plan) {
  if (!n.IsMap()) {
    error(at(n.Mark()), "prediction must be a mapping, e.g. {metric: time_us, change: -18%, range: [-25%, -15%]}");
    return;
  }
  auto keys = mapping(n, kPredictionKeys, "prediction key");
  Prediction p;
  bool ok = true;
  if (auto it = keys.find("metric"); it != keys.end()) {
    auto s = scalar(it->second.second, "prediction.metric");
    if (s && !plan.metric(*s)) {
      error(at(it->second.second.Mark()),
            fmt::format("prediction names unknown metric '{}'{}", *s, util::suggestion_suffix(*s, metric_names(plan))));
      ok = false;
    } else if (s) {
      p.metric = *s;
    } else {
      ok = false;
    }
  } else {
    error(at(n.Mark()), "prediction needs 'metric'");
    ok = false;
  }
  if (auto it = keys.find("change"); it != keys.end()) {
    auto v = percent(it->second.second, "prediction.change");
    if (v) p.change_pct = *v;
    else ok = false;
  } else {
    error(at(n.Mark()), "prediction needs 'change', e.g. change: -18%");
    ok = false;
  }
  if (auto it = keys.find("range"); it != keys.end()) {
    const auto& r = it->second.second;
    if (!r.IsSequence() || r.size() != 2) {
      error(at(r.Mark()), "prediction.range must be [low%, high%]");
      ok = false;
    } else {
      auto lo = percent(r[0], "prediction.range low"), hi = percent(r[1], "prediction.range high");
      if (lo && hi && *lo > *hi) {
        error(at(r.Mark()), fmt::format("prediction.range [{}%, {}%] has low above high", *lo, *hi));
        ok = false;
      } else if (lo && hi) {
        p.range_pct = std::pair{*lo, *hi};
      } else {
        ok = false;
      }
    }
  }
  if (ok) plan.prediction = p;
}

void Loader::load_model(const YAML::Node& n, Plan& plan) {
  if (!n.IsMap()) {
    error(at(n.Mark()), "model must be a mapping, e.g. {metric: time_us, x: batch}");
    return;
  }
  auto keys = mapping(n, {"metric", "x"}, "model key");
  Model m;
  for (auto [key, field] : {std::pair{"metric", &m.metric}, {"x", &m.axis}}) {
    auto it = keys.find(key);
    if (it == keys.end()) {
      error(at(n.Mark()), fmt::format("model needs '{}'", key));
      return;
    }
    auto v = scalar(it->second.second, fmt::format("model.{}", key));
    if (!v) return;
    *field = *v;
  }
  if (!plan.metric(m.metric)) {
    error(at(keys.at("metric").second.Mark()), fmt::format("model names unknown metric '{}'{}", m.metric,
                                                           util::suggestion_suffix(m.metric, metric_names(plan))));
    return;
  }
  auto axis = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const Axis& a) { return a.name == m.axis; });
  if (axis == plan.axes.end()) {
    std::vector<std::string> names;
    for (const auto& a : plan.axes) names.push_back(a.name);
    error(at(keys.at("x").second.Mark()),
          fmt::format("model names unknown axis '{}'{}", m.axis, util::suggestion_suffix(m.axis, names)));
    return;
  }
  for (const auto& v : axis->values) {
    auto x = util::parse_double(v);
    if (!x || !std::isfinite(*x)) {
      error(at(keys.at("x").second.Mark()),
            fmt::format("model axis '{}' has the value '{}', which is not a number", m.axis, v));
      return;
    }
  }
  plan.model = m;
}

// Whether the metric's selector (its JSON path, regex, field, tag or ncu metric) is one its
// source can use.
bool Loader::check_selector(const Metric& m, const YAML::Node& src) {
  bool ok = true;
  if (m.selector.empty()) {
    static const std::map<Source, const char*> what = {{Source::json, "json path"},
                                                       {Source::regex, "regex"},
                                                       {Source::hyperfine, "hyperfine field"},
                                                       {Source::gbench, "gbench field"},
                                                       {Source::nvbench, "nvbench summary tag"},
                                                       {Source::ncu, "ncu metric name"}};
    error(at(src.Mark()), fmt::format("metric '{}' has an empty {}", m.name, what.at(m.source)));
    ok = false;
  } else if (m.source == Source::regex) {
    if (auto re = util::compile_regex(m.selector); !re)
      error(at(src.Mark()), fmt::format("the regex of metric '{}' does not compile: {}", m.name, re.error()));
    else if (re.value().mark_count() < 1)
      error(at(src.Mark()),
            fmt::format("the regex of metric '{}' has no group; group 1 must capture the number", m.name),
            "e.g. regex: 'time: ([0-9.eE+-]+)'");
  } else if (m.source == Source::hyperfine &&
             std::find(kHyperfineFields.begin(), kHyperfineFields.end(), m.selector) == kHyperfineFields.end()) {
    error(at(src.Mark()),
          fmt::format("metric '{}': hyperfine field '{}' is not one of mean, median, min, max, stddev, times{}", m.name,
                      m.selector, util::suggestion_suffix(m.selector, kHyperfineFields)));
    ok = false;
  } else if (m.source == Source::ncu && !ncu_set(m.selector) &&
             (m.selector.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
                  std::string::npos ||
              m.selector.find("__") == std::string::npos)) {
    // Passed to ncu in one comma-separated --metrics list: anything else would split or inject.
    error(
        at(src.Mark()), fmt::format("metric '{}': '{}' is not an ncu metric name", m.name, m.selector),
        "an ncu metric is unit__counter.rollup.submetric in letters, digits, '_' and '.', e.g. "
        "dram__throughput.avg.pct_of_peak_sustained_elapsed (ncu --query-metrics lists them), or the set 'occupancy'");
    ok = false;
  }
  return ok;
}

// `name:` selects hyperfine results / gbench rows, `state:` nvbench states.
bool Loader::load_metric_filter(Metric& m, const KeyMap& keys, const std::string& key, const Plan& plan) {
  bool ok = true;
  const char* filter_key = m.source == Source::nvbench                                     ? "state"
                           : (m.source == Source::hyperfine || m.source == Source::gbench) ? "name"
                                                                                           : nullptr;
  for (const char* k : {"name", "state"}) {
    auto it = keys.find(k);
    if (it == keys.end()) continue;
    if (!filter_key || std::string_view(k) != filter_key) {
      error(at(it->second.first.Mark()),
            filter_key
                ? fmt::format("metric '{}': '{}' does not apply to '{}' (it takes '{}')", m.name, k, key, filter_key)
                : fmt::format("metric '{}': '{}' does not apply to '{}'", m.name, k, key),
            "name: selects hyperfine results and gbench rows, state: nvbench states");
      ok = false;
      continue;
    }
    auto f = scalar(it->second.second, fmt::format("metrics.{}.{}", m.name, k));
    if (!f) {
      ok = false;
      continue;
    }
    // {axis} is replaced by the cell's value, regex-escaped (plan::metrics_for); the regex is
    // checked with each axis's first value in its place.
    Cell first;
    for (const auto& a : plan.axes) first.values.push_back(a.values.front());
    if (auto re = util::compile_regex(substitute_regex(plan, first, *f))) {
      m.filter = *f;
    } else {
      error(at(it->second.second.Mark()),
            fmt::format("the {} regex of metric '{}' does not compile: {}", k, m.name, re.error()),
            placeholder_hint(plan, *f));
      ok = false;
    }
  }
  return ok;
}

}  // namespace abtrack::plan
