#include "plan/load.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::plan {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kTopKeys = {
    "experiment", "title",   "doc",     "template", "what",    "why",     "how",
    "prediction", "axes",    "exclude", "baseline", "setup",   "command", "env",
    "timeout",    "repeats", "metrics", "gates",    "workdir", "alpha",   "min_effect", "model", "artifacts", "plot",
    "jobs",       "gpus",    "executor", "slurm", "revisions", "build", "build_timeout", "rounds",
    "max_rounds", "budget", "warmup", "throttle"};
const std::vector<std::string> kMetricKeys = {"json", "regex", "hyperfine", "gbench", "nvbench", "ncu", "file", "name",
                                              "state", "kernel", "launch", "scale",  "better", "unit", "warmup"};
const std::vector<std::pair<std::string, Source>> kMetricSources = {
    {"json", Source::json}, {"regex", Source::regex}, {"hyperfine", Source::hyperfine},
    {"gbench", Source::gbench}, {"nvbench", Source::nvbench}, {"ncu", Source::ncu}};
const std::vector<std::string> kHyperfineFields = {"mean", "median", "min", "max", "stddev", "times"};
const std::vector<std::string> kPredictionKeys = {"metric", "change", "range"};

constexpr std::size_t kMaxPlanBytes = 1 << 20;

// [a-z0-9][a-z0-9._-]{0,63}
bool valid_experiment(std::string_view s) {
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 64 || !lower_digit(s[0])) return false;
  for (char c : s)
    if (!lower_digit(c) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

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

// For a YAML syntax error on a line `key: value` whose plain (unquoted) value holds ": ", "{"
// or "[" (a command printing JSON, a dictionary literal), which YAML reads as structure: how to
// quote the value. Empty when the line is not like that.
std::string quoting_hint(std::string_view text, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return {};
  std::size_t start = 0;
  for (int line = 0; line < mark.line; ++line) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  std::string_view line = text.substr(start, text.find('\n', start) - start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto item = util::trim(line);
  if (item.starts_with("- ")) item = util::trim(item.substr(2));  // a list item
  auto colon = item.find(": ");
  if (colon == std::string_view::npos) return {};
  std::string_view key = util::trim(item.substr(0, colon));
  std::string_view value = util::trim(item.substr(colon + 2));
  if (key.empty() || value.empty() || key.find_first_of("{[\"'") != std::string_view::npos) return {};
  if (value.front() == '{' || value.front() == '[') {
    // A flow collection is meant as one unless text follows its end (`{codec} < in`).
    int depth = 0;
    std::size_t end = 0;
    while (end < value.size()) {
      const char c = value[end++];
      depth += (c == '{' || c == '[') - (c == '}' || c == ']');
      if (depth == 0) break;
    }
    auto rest = util::trim(value.substr(end));
    if (depth != 0 || rest.empty() || rest.front() == '#') return {};
  } else if (std::string_view("\"'|>&*!").find(value.front()) != std::string_view::npos) {
    return {};  // a quoted string, a block scalar, an anchor, an alias or a tag
  } else if (value.find(": ") == std::string_view::npos && value.find_first_of("{[") == std::string_view::npos) {
    return {};
  }
  std::string escaped;
  for (char c : value) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return fmt::format("the value of '{}' holds ': ', '{{' or '[', which YAML reads as structure: quote the whole value, "
                     "e.g. {}: \"{}\" (or in single quotes, each ' doubled), or write it as a block scalar: {}: | and the "
                     "value on the next line, indented",
                     key, key, escaped, key);
}

class Loader {
 public:
  Loader(std::string file, fs::path repo_root) : m_file(std::move(file)), m_root(std::move(repo_root)) {}

  Plan load(std::string_view text) {
    Plan plan;
    plan.repo_root = m_root;
    plan.sha256 = util::sha256_hex(text);
    if (text.size() > kMaxPlanBytes) {
      error({m_file, 0, 0}, fmt::format("plan is {} bytes; at most {} are accepted", text.size(), kMaxPlanBytes));
      finish();
    }
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      error(at(e.mark), "invalid YAML: " + e.msg, quoting_hint(text, e.mark));
      finish();
    }
    if (!root.IsMap()) {
      error(at(root.Mark()), "a plan is a mapping of keys (experiment, doc, axes, command, metrics, ...)");
      finish();
    }
    auto keys = mapping(root, kTopKeys, "plan key");
    auto get = [&](const char* k) -> const YAML::Node* {
      auto it = keys.find(k);
      return it == keys.end() ? nullptr : &it->second.second;
    };
    auto mark = [&](const char* k) { return get(k) ? at(get(k)->Mark()) : Location{m_file, 0, 0}; };

    if (auto n = get("experiment")) {
      plan.experiment = scalar(*n, "experiment").value_or("");
      if (n->IsScalar() && plan.experiment.empty()) error(at(n->Mark()), "experiment name is empty", "e.g. experiment: occupancy");
      if (!plan.experiment.empty() && (!valid_experiment(plan.experiment) || plan.experiment.find("..") != std::string::npos))
        error(at(n->Mark()), fmt::format("experiment name '{}' is not valid", plan.experiment),
              "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters, no '..'");
    } else {
      missing("experiment", "name the experiment, e.g. experiment: occupancy");
    }
    plan.title = get("title") ? scalar(*get("title"), "title").value_or("") : plan.experiment;
    if (get("title") && has_control(plan.title, false)) {
      error(at(get("title")->Mark()), "the title holds a control character (a line break, NUL, an escape)",
            "a title is one line of plain text");
      plan.title = plan.experiment;
    }
    if (auto n = get("doc")) {
      if (auto s = scalar(*n, "doc")) plan.doc = repo_path(*n, *s, "doc", false);
      if (plan.doc == kRunsFolder || plan.doc.starts_with(std::string(kRunsFolder) + "/")) {
        error(at(n->Mark()), fmt::format("doc '{}' is inside {}/, where abtrack keeps its records", plan.doc, kRunsFolder),
              "put the A/B document elsewhere, e.g. doc: AB.md");
        plan.doc.clear();
      }
      std::error_code ec;
      if (!plan.doc.empty() && fs::is_directory(m_root / plan.doc, ec)) {
        error(at(n->Mark()), fmt::format("doc '{}' is a folder", plan.doc), "name the markdown file, e.g. doc: " + plan.doc + "/AB.md");
        plan.doc.clear();
      }
    } else {
      missing("doc", "name the A/B document, e.g. doc: OCCUPANCY_AB.md");
    }
    if (auto n = get("template"))
      if (auto s = scalar(*n, "template")) {
        plan.template_path = repo_path(*n, *s, "template", false);
        std::error_code ec;
        if (!plan.template_path->empty() && !fs::is_regular_file(m_root / *plan.template_path, ec)) {
          error(at(n->Mark()), fmt::format("template '{}' is not a file", *plan.template_path),
                "give the path of a markdown template from the repository root, or leave template: out for the built-in one");
          plan.template_path.reset();
        }
      }
    if (auto n = get("workdir"))
      if (auto s = scalar(*n, "workdir")) {
        plan.workdir = repo_path(*n, *s, "workdir", true);
        std::error_code ec;
        // (a plan with a setup or build may make it there, e.g. a build folder; with revisions
        // it is checked in each revision's tree, after its build)
        if (!plan.workdir.empty() && !get("setup") && !get("build") && !get("revisions") && !fs::is_directory(m_root / plan.workdir, ec))
          error(at(n->Mark()), fmt::format("workdir '{}' is not a folder", plan.workdir),
                "the folder the command runs in, from the repository root");
      }
    for (auto [key, field] : {std::pair{"what", &plan.what}, {"why", &plan.why}, {"how", &plan.how},
                              {"setup", &plan.setup}, {"command", &plan.command}})
      if (auto n = get(key)) *field = scalar(*n, key).value_or("");
    if (!get("command")) missing("command", "give the command that runs one cell, e.g. command: ./bench --warps {warps}");
    else if (get("command")->IsScalar() && util::trim(plan.command).empty()) error(mark("command"), "command is empty");

    // `key:` a positive number of seconds, or a whole number from 1 to `most`.
    auto seconds = [&](const char* key, double& field) {
      if (auto n = get(key)) {
        if (auto v = number(*n, key); v && !(*v > 0 && std::isfinite(*v)))
          error(at(n->Mark()), fmt::format("{} must be a positive number of seconds, not {}", key, n->Scalar()));
        else if (v) field = *v;
      }
    };
    auto whole = [&](const char* key, int most, int& field) {
      if (auto n = get(key)) {
        if (auto v = number(*n, key); v && !(*v >= 1 && *v <= most && std::floor(*v) == *v))
          error(at(n->Mark()), fmt::format("{} must be a whole number from 1 to {}, not {}", key, most, n->Scalar()));
        else if (v) field = static_cast<int>(*v);
      }
    };
    seconds("timeout", plan.timeout_s);
    whole("repeats", 100000, plan.repeats);
    if (auto n = get("env")) load_env(*n, plan);
    if (auto n = get("alpha")) {
      if (auto v = number(*n, "alpha"); v && !(*v > 0 && *v < 1))
        error(at(n->Mark()), fmt::format("alpha must be between 0 and 1 (e.g. 0.05), not {}", n->Scalar()));
      else if (v) plan.alpha = *v;
    }
    if (auto n = get("min_effect")) {
      if (auto v = percent(*n, "min_effect"); v && !(*v >= 0 && *v < 100))
        error(at(n->Mark()), fmt::format("min_effect must be a percentage from 0% to below 100% (e.g. 0.5%), not {}", n->Scalar()));
      else if (v) plan.min_effect_pct = *v;
    }

    if (auto n = get("revisions")) load_revisions(*n, plan);
    if (auto n = get("build")) plan.build = scalar(*n, "build").value_or("");
    seconds("build_timeout", plan.build_timeout_s);
    if (auto n = get("rounds"); n && n->IsScalar() && n->Scalar() == "auto") plan.rounds_auto = true;
    else whole("rounds", 10000, plan.rounds);
    if (auto n = get("max_rounds")) {
      if (auto v = number(*n, "max_rounds"); v && !(*v >= 2 && *v <= 10000 && std::floor(*v) == *v))
        error(at(n->Mark()), fmt::format("max_rounds must be a whole number from 2 to 10000, not {}", n->Scalar()),
              "rounds: auto needs at least 2 rounds to see how much the rounds vary");
      else if (v) plan.max_rounds = static_cast<int>(*v);
    }
    if (auto n = get("budget")) {
      if (auto v = n->IsScalar() ? util::parse_duration(n->Scalar()) : std::nullopt) plan.budget_s = *v;
      else error(at(n->Mark()), fmt::format("budget must be a duration, not '{}'", n->IsScalar() ? n->Scalar() : "a list or map"),
                 "e.g. budget: 30m, 2h, 1h30m or 90s");
    }
    // Without revisions a build runs in the work tree before the cells, as a setup does.
    if (plan.revisions.empty() && !util::trim(plan.build).empty())
      plan.setup = util::trim(plan.setup).empty() ? plan.build : plan.build + " && " + plan.setup;
    if (auto n = get("axes")) load_axes(*n, plan);
    else if (plan.revisions.empty()) missing("axes", "list what is varied, e.g. axes: {warps: [4, 8]}");
    if (auto n = get("warmup")) load_warmup(*n, "warmup", plan.warmup, m_warmup_where);
    if (auto n = get("metrics")) load_metrics(*n, plan);
    else missing("metrics", "say how to read results, e.g. metrics: {time_us: {json: median_us}}");
    if (auto n = get("exclude")) {
      if (n->IsSequence()) {
        for (const auto& e : *n) {
          auto a = assignment(e, plan, "exclude entry");
          if (a) plan.exclude.push_back(*a);
        }
      } else {
        error(at(n->Mark()), "exclude must be a list of partial cells, e.g. exclude: [{warps: 8, stages: 3}]");
      }
    }
    if (auto n = get("baseline")) plan.baseline = assignment(*n, plan, "baseline");
    if (auto n = get("gates")) load_gates(*n, plan);
    if (auto n = get("prediction")) load_prediction(*n, plan);
    if (auto n = get("model")) load_model(*n, plan);
    if (auto n = get("artifacts")) load_artifacts(*n, plan);
    if (auto n = get("plot")) {
      if (n->IsMap()) {
        for (auto& [k, v] : ordered(*n, "plot key")) {
          auto y = k.Scalar() == "y" ? scalar(v, "plot.y") : std::nullopt;
          if (y == "log" || y == "linear") plan.plot_log_y = *y == "log";
          else if (k.Scalar() != "y") error(at(k.Mark()), fmt::format("plot has no key '{}'", k.Scalar()), "plot: {y: log} or {y: linear}");
          else if (y) error(at(v.Mark()), fmt::format("plot.y must be log or linear, not '{}'", *y));
        }
      } else {
        auto v = scalar(*n, "plot");
        if (v == "true" || v == "false") plan.plot = *v == "true";
        else if (v) error(at(n->Mark()), fmt::format("plot must be true or false, or {{y: log|linear}}, not '{}'", *v));
      }
    }
    load_scale_out(get("jobs"), get("gpus"), get("executor"), get("slurm"), plan);
    if (auto n = get("throttle")) {
      auto v = scalar(*n, "throttle");
      if (v == "warn" || v == "invalid") plan.throttle = *v == "warn" ? Throttle::warn : Throttle::invalid;
      else if (v) error(at(n->Mark()), fmt::format("throttle must be warn or invalid, not '{}'{}", *v, util::suggestion_suffix(*v, {"warn", "invalid"})),
                        "throttle: warn flags runs the GPU throttled; throttle: invalid makes them invalid");
    }

    if (m_errors.empty()) {
      if (plan.cells().empty()) error(mark("exclude"), "every cell of the sweep is excluded");
      if (plan.baseline) {
        bool any = false;
        for (const auto& c : plan.cells()) any |= matches(plan, c, *plan.baseline);
        if (!any) error(mark("baseline"), "the baseline matches no cell that is not excluded");
      }
      if (plan.rounds_auto)
        if (auto problem = auto_rounds_problem(plan)) error(mark("rounds"), problem->first, problem->second);
      if (plan.prediction && !plan.baseline)
        warn(mark("prediction"), "the prediction is judged against the baseline, and the plan names none: it stays unjudged",
             "add baseline: {axis: value}");
      check_placeholders(plan, mark("command"), plan.command);
      check_build_placeholders(plan, mark("build"), plan.build);
      plan.warnings = m_warnings;
    }
    finish();
    return plan;
  }

 private:
  using KeyMap = std::map<std::string, std::pair<YAML::Node, YAML::Node>>;

  Location at(const YAML::Mark& m) const {
    if (m.is_null()) return {m_file, 0, 0};
    return {m_file, m.line + 1, m.column + 1};
  }
  void error(Location where, std::string msg, std::string hint = {}) {
    m_errors.push_back(Diagnostic{std::move(where), std::move(msg), std::move(hint)});
  }
  // Whether `s` holds a C0 control character or DEL (a tab allowed where `tab_ok`).
  static bool has_control(std::string_view s, bool tab_ok) {
    return std::any_of(s.begin(), s.end(), [&](char c) {
      const auto u = static_cast<unsigned char>(c);
      return (u < 0x20 && !(tab_ok && c == '\t')) || u == 0x7f;
    });
  }

  void warn(Location where, std::string msg, std::string hint = {}) {
    m_warnings.push_back(Diagnostic{std::move(where), std::move(msg), std::move(hint)});
  }
  void missing(const char* key, std::string hint) {
    error({m_file, 0, 0}, fmt::format("missing required key '{}'", key), std::move(hint));
  }
  void finish() {
    if (!m_errors.empty()) {
      auto key = [](const Diagnostic& d) {
        return d.where ? std::pair(d.where->line, d.where->column) : std::pair(0, 0);
      };
      std::stable_sort(m_errors.begin(), m_errors.end(),
                       [&](const Diagnostic& a, const Diagnostic& b) { return key(a) < key(b); });
      throw Error(Exit::usage, std::move(m_errors));
    }
  }

  // Checks a mapping's keys (unknown, duplicate) and returns them by name.
  KeyMap mapping(const YAML::Node& n, const std::vector<std::string>& allowed, const char* what) {
    KeyMap out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      // Copies: yaml-cpp's iterator hands out a temporary proxy, so a reference to it->first
      // dangles at the end of the statement (ASan: stack-use-after-scope).
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) {
        error(at(k.Mark()), fmt::format("a {} must be a plain name", what));
        continue;
      }
      std::string key = k.Scalar();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(at(k.Mark()), fmt::format("unknown {} '{}'{}", what, key, util::suggestion_suffix(key, allowed)));
        continue;
      }
      if (auto prev = out.find(key); prev != out.end()) {
        error(at(k.Mark()), fmt::format("duplicate key '{}' (first given at line {})", key, prev->second.first.Mark().line + 1));
        continue;
      }
      out.emplace(key, std::pair{k, v});
    }
    return out;
  }

  // The key nodes of a mapping in document order, with duplicate keys reported.
  std::vector<std::pair<YAML::Node, YAML::Node>> ordered(const YAML::Node& n, const char* what) {
    std::vector<std::pair<YAML::Node, YAML::Node>> out;
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar() || it->first.Scalar().empty()) {
        error(at(it->first.Mark()), fmt::format("a {} must be a plain name", what));
        continue;
      }
      if (!seen.insert(it->first.Scalar()).second) {
        error(at(it->first.Mark()), fmt::format("duplicate {} '{}'", what, it->first.Scalar()));
        continue;
      }
      out.emplace_back(it->first, it->second);
    }
    return out;
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& what) {
    if (n.IsScalar()) return n.Scalar();
    const bool flow = (n.IsMap() || n.IsSequence()) && n.Style() == YAML::EmitterStyle::Flow;
    error(at(n.Mark()), fmt::format("{} must be a single value, not {}", what, kind(n)),
          flow ? "an unquoted value that starts with '{' or '[' is a YAML mapping or list: quote the whole value to give "
                 "it as text, e.g. command: \"{codec} < in\""
               : "");
    return std::nullopt;
  }
  std::optional<double> number(const YAML::Node& n, const std::string& what) {
    if (!n.IsScalar()) {
      error(at(n.Mark()), fmt::format("{} must be a number, not {}", what, kind(n)));
      return std::nullopt;
    }
    auto v = util::parse_double(n.Scalar());
    if (!v) error(at(n.Mark()), fmt::format("{} must be a number, not '{}'", what, n.Scalar()));
    return v;
  }
  static std::string kind(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Map: return "a mapping";
      case YAML::NodeType::Sequence: return "a list";
      case YAML::NodeType::Null: return "empty";
      default: return "a value";
    }
  }

  // A path inside the repository, normalised, '/'-separated; symlinks that leave it are refused.
  std::string repo_path(const YAML::Node& n, const std::string& raw, const char* what, bool allow_root) {
    fs::path p(raw);
    if (raw.empty() || p.is_absolute()) {
      error(at(n.Mark()), fmt::format("{} must be a path relative to the repository root, not '{}'", what, raw));
      return {};
    }
    fs::path norm = p.lexically_normal();
    std::string s = norm.generic_string();
    while (!s.empty() && s.back() == '/') s.pop_back();
    if (s == "." && allow_root) return {};
    if (s.empty() || s == "." || s == ".." || s.starts_with("../")) {
      error(at(n.Mark()), fmt::format("{} '{}' is outside the repository", what, raw),
            "paths in the plan are relative to the repository root");
      return {};
    }
    if (s == ".git" || s.starts_with(".git/")) {
      error(at(n.Mark()), fmt::format("{} '{}' is inside .git", what, raw));
      return {};
    }
    std::error_code ec;
    fs::path root = fs::weakly_canonical(m_root, ec);
    fs::path full = fs::weakly_canonical(m_root / norm, ec);
    auto rel = full.lexically_relative(root).generic_string();
    if (!ec && (rel.empty() || rel == ".." || rel.starts_with("../"))) {
      error(at(n.Mark()), fmt::format("{} '{}' leads outside the repository through a symbolic link", what, raw));
      return {};
    }
    return s;
  }

  // `artifacts: [path, ...]`: repo-relative files whose SHA-256 each run records; {axis} allowed.
  // An entry may be `{path: P, build_log: L}`: L holds ptxas's output for P (spill warnings).
  void load_artifacts(const YAML::Node& n, Plan& plan) {
    if (!n.IsSequence()) {
      error(at(n.Mark()), "artifacts must be a list of repository-relative paths, e.g. artifacts: ['build/k-{warps}.cubin']");
      return;
    }
    for (const auto& entry : n) {
      YAML::Node e = entry;
      ArtifactOptions options;
      if (entry.IsMap()) {
        auto keys = mapping(entry, {"path", "build_log", "kernel"}, "artifact key");
        if (!keys.count("path")) {
          error(at(entry.Mark()), "an artifact given as a mapping needs 'path'", "e.g. {path: build/k.cubin, build_log: build/ptxas.log}");
          continue;
        }
        e = keys.at("path").second;
        if (auto it = keys.find("build_log"); it != keys.end()) {
          auto l = scalar(it->second.second, "build_log");
          if (!l) continue;
          options.build_log = repo_path(it->second.second, *l, "build_log", false);
          if (options.build_log.empty()) continue;
        }
        if (auto it = keys.find("kernel"); it != keys.end()) {
          auto k = scalar(it->second.second, "artifact kernel");
          if (!k) continue;
          try {
            std::regex re(*k, std::regex::ECMAScript);
            options.kernel = *k;
          } catch (const std::regex_error& err) {
            error(at(it->second.second.Mark()), fmt::format("the kernel regex of artifact '{}' does not compile: {}", e.Scalar(), err.what()));
            continue;
          }
        }
      }
      auto s = scalar(e, "artifact");
      if (!s) continue;
      std::string path = repo_path(e, *s, "artifact", false);
      if (path.empty()) continue;
      if (std::find(plan.artifacts.begin(), plan.artifacts.end(), path) != plan.artifacts.end()) {
        error(at(e.Mark()), fmt::format("artifact '{}' is listed twice", *s));
        continue;
      }
      plan.artifacts.push_back(path);
      plan.artifact_options.push_back(std::move(options));
    }
  }

  // jobs, gpus, executor, slurm (docs/SCALING.md).
  void load_scale_out(const YAML::Node* jobs, const YAML::Node* gpus, const YAML::Node* executor,
                      const YAML::Node* slurm, Plan& plan) {
    if (gpus) {
      if (!gpus->IsSequence() || gpus->size() == 0) {
        error(at(gpus->Mark()), "gpus must be a non-empty list of GPU ids, e.g. gpus: [0, 1]");
      } else {
        for (const auto& g : *gpus) {
          auto s = scalar(g, "gpu id");
          if (!s) continue;
          if (s->empty() || s->find_first_of(", \t") != std::string::npos)
            error(at(g.Mark()), fmt::format("gpu id '{}' must be one device (a number or a UUID)", *s));
          else if (std::find(plan.gpus.begin(), plan.gpus.end(), *s) != plan.gpus.end())
            error(at(g.Mark()), fmt::format("gpu id '{}' is listed twice", *s));
          else plan.gpus.push_back(*s);
        }
      }
      for (const auto& kv : plan.env)
        if (kv.first == "CUDA_VISIBLE_DEVICES")
          error(at(gpus->Mark()), "gpus and env: CUDA_VISIBLE_DEVICES both choose the GPU",
                "gpus gives each running cell its own CUDA_VISIBLE_DEVICES; remove it from env");
    }
    if (jobs) {
      if (auto v = number(*jobs, "jobs"); v && !(*v >= 1 && *v <= 1024 && std::floor(*v) == *v))
        error(at(jobs->Mark()), fmt::format("jobs must be a whole number from 1 to 1024, not {}", jobs->Scalar()));
      else if (v) plan.jobs = static_cast<int>(*v);
      if (!plan.gpus.empty() && plan.jobs > static_cast<int>(plan.gpus.size()))
        error(at(jobs->Mark()), fmt::format("jobs: {} but gpus lists {}; each running cell gets its own GPU", plan.jobs,
                                            plan.gpus.size()));
    } else if (!plan.gpus.empty()) {
      plan.jobs = static_cast<int>(plan.gpus.size());
    }
    if (executor) {
      auto s = scalar(*executor, "executor");
      if (s == "local") plan.executor = ExecutorKind::local;
      else if (s == "slurm") plan.executor = ExecutorKind::slurm;
      else if (s)
        error(at(executor->Mark()), fmt::format("executor must be local or slurm, not '{}'{}", *s,
                                                util::suggestion_suffix(*s, {"local", "slurm"})));
    }
    if (slurm) {
      if (!slurm->IsMap()) {
        error(at(slurm->Mark()), "slurm must be a mapping, e.g. slurm: {partition: gpu, gres: 'gpu:1', time: 10}");
      } else {
        auto keys = mapping(*slurm, {"partition", "gres", "time", "max_parallel", "account", "extra", "dir"}, "slurm key");
        auto text = [&](const char* k, std::string& dst) {
          if (auto it = keys.find(k); it != keys.end())
            dst = scalar(it->second.second, fmt::format("slurm {}", k)).value_or("");
        };
        text("partition", plan.slurm.partition);
        text("gres", plan.slurm.gres);
        text("time", plan.slurm.time);
        text("account", plan.slurm.account);
        text("dir", plan.slurm.dir);
        if (auto it = keys.find("max_parallel"); it != keys.end()) {
          const auto& n = it->second.second;
          if (auto v = number(n, "slurm max_parallel"); v && !(*v >= 1 && *v <= 100000 && std::floor(*v) == *v))
            error(at(n.Mark()), fmt::format("slurm max_parallel must be a whole number from 1 to 100000, not {}", n.Scalar()));
          else if (v) plan.slurm.max_parallel = static_cast<int>(*v);
        }
        if (auto it = keys.find("extra"); it != keys.end()) {
          const auto& n = it->second.second;
          if (n.IsScalar()) {
            plan.slurm.extra.push_back(n.Scalar());
          } else if (n.IsSequence()) {
            for (const auto& e : n)
              if (auto s = scalar(e, "slurm extra argument")) plan.slurm.extra.push_back(*s);
          } else {
            error(at(n.Mark()), "slurm extra must be a list of sbatch arguments, e.g. extra: ['--qos=short']");
          }
        }
      }
    }
    if (plan.executor == ExecutorKind::slurm) {
      if (gpus) error(at(gpus->Mark()), "gpus is for the local executor", "with executor: slurm, ask for GPUs with slurm: {gres: 'gpu:1'}");
      if (jobs) error(at(jobs->Mark()), "jobs is for the local executor", "with executor: slurm, use slurm: {max_parallel: N}");
      std::set<int> ncu_lines;  // a set's metrics share their line: one error for it
      for (const auto& m : plan.metrics)
        if (!m.file.empty())
          error(m.where, fmt::format("metric '{}' reads file: {}, which executor: slurm does not support", m.name, m.file),
                "print the value on stdout (a task's stdout travels back in its result file)");
        else if (m.source == Source::ncu && ncu_lines.insert(m.where.line).second)
          error(m.where, fmt::format("metric '{}' is read with ncu, which executor: slurm does not support", m.name),
                "profile with the local executor");
    } else if (slurm) {
      warn(at(slurm->Mark()), "slurm: is used only with executor: slurm");
    }
  }

  void load_env(const YAML::Node& n, Plan& plan) {
    if (!n.IsMap()) {
      error(at(n.Mark()), "env must be a mapping of variable names to values");
      return;
    }
    for (auto& [k, v] : ordered(n, "environment variable")) {
      if (!util::is_identifier(k.Scalar())) {
        error(at(k.Mark()), fmt::format("'{}' is not a valid environment variable name", k.Scalar()));
        continue;
      }
      if (auto s = scalar(v, "env." + k.Scalar())) plan.env.emplace_back(k.Scalar(), *s);
    }
  }

  // `revisions: {name: revision}`: the `rev` axis, first.
  void load_revisions(const YAML::Node& n, Plan& plan) {
    if (!n.IsMap() || n.size() == 0) {
      error(at(n.Mark()), "revisions must be a mapping of names to git revisions",
            "e.g. revisions: {base: main, mine: WORKTREE}");
      return;
    }
    Axis axis{std::string(kRevAxis), {}, at(n.Mark())};
    for (auto& [k, v] : ordered(n, "revision")) {
      const std::string name = k.Scalar();
      if (!util::is_identifier(name)) {
        error(at(k.Mark()), fmt::format("revision name '{}' must be a letter or '_' followed by letters, digits or '_'", name),
              "the name is the value of the rev axis (rev=base); the revision it names goes on the right: base: origin/main");
        continue;
      }
      auto spec = scalar(v, "revision");
      if (!spec) continue;
      if (util::trim(*spec).empty() || has_control(*spec, true) || spec->find_first_of(" \t\n") != std::string::npos) {
        error(at(v.Mark()), fmt::format("revision '{}' must name one git revision (a branch, tag, commit or HEAD~3) or WORKTREE", name));
        continue;
      }
      plan.revisions.emplace_back(name, *spec);
      axis.values.push_back(name);
    }
    if (!axis.values.empty()) plan.axes.push_back(std::move(axis));
  }

  void load_axes(const YAML::Node& n, Plan& plan) {
    if (!n.IsMap() || n.size() == 0) {
      error(at(n.Mark()), "axes must be a non-empty mapping of axis names to lists of values",
            "e.g. axes: {warps: [4, 8], batch: [16, 64]}");
      return;
    }
    for (auto& [k, v] : ordered(n, "axis")) {
      Axis axis{k.Scalar(), {}, at(k.Mark())};
      if (!plan.revisions.empty() && axis.name == kRevAxis) {
        error(at(k.Mark()), "the plan has revisions:, which make the rev axis; an axis cannot be called rev too",
              "name this axis otherwise, or list the code versions under revisions:");
        continue;
      }
      if (!util::is_identifier(axis.name)) {
        error(at(k.Mark()), fmt::format("axis name '{}' must be a letter or '_' followed by letters, digits or '_'", axis.name));
        continue;
      }
      if (!v.IsSequence()) {
        error(at(v.Mark()), fmt::format("axis '{}' must be a list of values, e.g. {}: [4, 8]", axis.name, axis.name));
        continue;
      }
      if (v.size() == 0) {
        error(at(v.Mark()), fmt::format("axis '{}' has no values", axis.name));
        continue;
      }
      for (const auto& e : v) {
        if (!e.IsScalar()) {
          error(at(e.Mark()), fmt::format("a value of axis '{}' must be a single value, not {}", axis.name, kind(e)));
          continue;
        }
        if (e.Scalar().find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
          error(at(e.Mark()), fmt::format("a value of axis '{}' spans several lines; values must be single lines", axis.name));
          continue;
        }
        if (has_control(e.Scalar(), true)) {
          error(at(e.Mark()), fmt::format("a value of axis '{}' holds a control character (an escape, a backspace)", axis.name),
                "values are printed on terminals and in the document: plain text only");
          continue;
        }
        if (std::find(axis.values.begin(), axis.values.end(), e.Scalar()) != axis.values.end()) {
          error(at(e.Mark()), fmt::format("axis '{}' lists '{}' twice", axis.name, e.Scalar()));
          continue;
        }
        axis.values.push_back(e.Scalar());
      }
      if (!axis.values.empty()) plan.axes.push_back(std::move(axis));
    }
    std::size_t total = 1;
    bool more = false;  // past 100000: the product is not worth finishing (it can overflow)
    for (const auto& a : plan.axes) {
      total *= a.values.size();
      if (total > 100000) {
        more = true;
        break;
      }
    }
    if (more) error(at(n.Mark()), "the axes make more than 100000 cells; at most 100000 are supported");
  }

  std::optional<Assignment> assignment(const YAML::Node& n, const Plan& plan, const char* what) {
    if (!n.IsMap() || n.size() == 0) {
      error(at(n.Mark()), fmt::format("{} must be a mapping of axes to values, e.g. {{warps: 4}}", what));
      return std::nullopt;
    }
    std::vector<std::string> names;
    for (const auto& a : plan.axes) names.push_back(a.name);
    Assignment out;
    bool ok = true;
    for (auto& [k, v] : ordered(n, "axis")) {
      const std::string key = k.Scalar();  // a structured binding cannot be captured before C++20 in clang 14
      auto it = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const Axis& a) { return a.name == key; });
      if (it == plan.axes.end()) {
        error(at(k.Mark()), fmt::format("{} names unknown axis '{}'{}", what, k.Scalar(), util::suggestion_suffix(k.Scalar(), names)));
        ok = false;
        continue;
      }
      auto value = scalar(v, fmt::format("{} value of '{}'", what, k.Scalar()));
      if (!value) {
        ok = false;
        continue;
      }
      if (std::find(it->values.begin(), it->values.end(), *value) == it->values.end()) {
        error(at(v.Mark()),
              fmt::format("{} gives axis '{}' the value '{}', which the axis does not have{}", what, k.Scalar(), *value,
                          util::suggestion_suffix(*value, it->values)),
              fmt::format("the values of '{}' are: {}", k.Scalar(), fmt::join(it->values, ", ")));
        ok = false;
        continue;
      }
      out.emplace_back(k.Scalar(), *value);
    }
    if (!ok) return std::nullopt;
    // Keep plan axis order so labels read the same everywhere.
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
      return std::find(names.begin(), names.end(), a.first) < std::find(names.begin(), names.end(), b.first);
    });
    return out;
  }

  void load_metrics(const YAML::Node& n, Plan& plan) {
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
        error(at(k.Mark()), fmt::format("metric name '{}' must be a letter or '_' followed by letters, digits or '_'", m.name));
        continue;
      }
      if (!v.IsMap()) {
        error(at(v.Mark()), fmt::format("metric '{}' must be a mapping, e.g. {{json: median_us}} or {{regex: 'time: ([0-9.]+)'}}", m.name));
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
        else if (b) error(at(it->second.second.Mark()), fmt::format("better must be 'lower' or 'higher', not '{}'{}", *b, util::suggestion_suffix(*b, {"lower", "higher"})));
      }
      if (auto it = keys.find("unit"); it != keys.end()) m.unit = scalar(it->second.second, "unit").value_or("");
      m.warmup = plan.warmup;
      m.warmup_where = m_warmup_where;
      if (auto it = keys.find("warmup"); it != keys.end())
        load_warmup(it->second.second, fmt::format("metric '{}': warmup", m.name), m.warmup, m.warmup_where);
      plan.metrics.push_back(std::move(m));
    }
  }

  // `warmup:` (the plan's or a metric's): how many samples of every invocation are dropped.
  void load_warmup(const YAML::Node& n, const std::string& what, int& field, Location& where) {
    auto v = number(n, what);
    if (v && !(*v >= 0 && *v <= 1e9 && std::floor(*v) == *v))
      error(at(n.Mark()), fmt::format("{} must be a whole number of samples, 0 or more, not {}", what, n.Scalar()),
            "the first N samples of every invocation are dropped as warm-up, e.g. warmup: 2");
    else if (v) {
      field = static_cast<int>(*v);
      where = at(n.Mark());
    }
  }

  // `kernel:` (a regex, {axis} allowed) and `launch:` (an integer >= 0), which only ncu takes.
  bool load_ncu_keys(Metric& m, const YAML::Node& v, const KeyMap& keys, const Plan& plan) {
    bool ok = true;
    for (const char* k : {"kernel", "launch"}) {
      auto it = keys.find(k);
      if (it == keys.end() || m.source == Source::ncu) continue;
      error(at(it->second.first.Mark()), fmt::format("metric '{}': '{}' does not apply to '{}'", m.name, k, to_string(m.source)),
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
        try {
          std::regex re(substitute_regex(plan, first, *f), std::regex::ECMAScript);
          m.kernel = *f;
        } catch (const std::regex_error& e) {
          error(at(n.Mark()), fmt::format("the kernel regex of metric '{}' does not compile: {}", m.name, e.what()),
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

  // `NAME: {ncu: SET, kernel: ..., launch: ...}`: one metric per entry of the set, NAME_<suffix>,
  // each with the set's unit and the same kernel and launch.
  void expand_ncu_set(const Metric& m, const KeyMap& keys, Plan& plan) {
    for (const char* k : {"better", "unit", "scale"})
      if (auto it = keys.find(k); it != keys.end())
        error(at(it->second.first.Mark()), fmt::format("metric '{}': '{}' does not apply to the ncu set '{}'", m.name, k, m.selector),
              fmt::format("name the set's metrics one by one (e.g. {}_dram: {{ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, "
                          "better: lower}}) to give them '{}'",
                          m.name, k));
    for (const auto& e : *ncu_set(m.selector)) {
      Metric one = m;
      one.name = m.name + "_" + e.suffix;
      one.selector = e.metric;
      one.unit = e.unit;
      if (plan.metric(one.name)) {
        error(m.where, fmt::format("metric '{}' (from ncu: {}) is also defined elsewhere in the plan", one.name, m.selector),
              "rename one of them");
        continue;
      }
      plan.metrics.push_back(std::move(one));
    }
  }

  // The source of one metric: exactly one format key, with its `name:`/`state:`, `file:` and
  // `scale:`. False when it has a mistake (recorded as an error).
  bool load_metric_source(Metric& m, const YAML::Node& v, const KeyMap& keys, const Plan& plan) {
    std::vector<const std::pair<std::string, Source>*> given;
    for (const auto& s : kMetricSources)
      if (keys.count(s.first)) given.push_back(&s);
    if (given.empty()) {
      error(at(v.Mark()), fmt::format("metric '{}' needs one of 'json', 'regex', 'hyperfine', 'gbench', 'nvbench' or 'ncu'", m.name),
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
    bool ok = true;
    if (m.selector.empty()) {
      static const std::map<Source, const char*> what = {{Source::json, "json path"}, {Source::regex, "regex"},
                                                         {Source::hyperfine, "hyperfine field"}, {Source::gbench, "gbench field"},
                                                         {Source::nvbench, "nvbench summary tag"}, {Source::ncu, "ncu metric name"}};
      error(at(src.Mark()), fmt::format("metric '{}' has an empty {}", m.name, what.at(m.source)));
      ok = false;
    } else if (m.source == Source::regex) {
      try {
        std::regex re(m.selector, std::regex::ECMAScript);
        if (re.mark_count() < 1)
          error(at(src.Mark()), fmt::format("the regex of metric '{}' has no group; group 1 must capture the number", m.name),
                "e.g. regex: 'time: ([0-9.eE+-]+)'");
      } catch (const std::regex_error& e) {
        error(at(src.Mark()), fmt::format("the regex of metric '{}' does not compile: {}", m.name, e.what()));
      }
    } else if (m.source == Source::hyperfine &&
               std::find(kHyperfineFields.begin(), kHyperfineFields.end(), m.selector) == kHyperfineFields.end()) {
      error(at(src.Mark()),
            fmt::format("metric '{}': hyperfine field '{}' is not one of mean, median, min, max, stddev, times{}", m.name,
                        m.selector, util::suggestion_suffix(m.selector, kHyperfineFields)));
      ok = false;
    } else if (m.source == Source::ncu && !ncu_set(m.selector) &&
               (m.selector.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != std::string::npos ||
                m.selector.find("__") == std::string::npos)) {
      // Passed to ncu in one comma-separated --metrics list: anything else would split or inject.
      error(at(src.Mark()), fmt::format("metric '{}': '{}' is not an ncu metric name", m.name, m.selector),
            "an ncu metric is unit__counter.rollup.submetric in letters, digits, '_' and '.', e.g. "
            "dram__throughput.avg.pct_of_peak_sustained_elapsed (ncu --query-metrics lists them), or the set 'occupancy'");
      ok = false;
    }
    ok = load_ncu_keys(m, v, keys, plan) && ok;

    // `name:` selects hyperfine results / gbench rows, `state:` nvbench states.
    const char* filter_key = m.source == Source::nvbench ? "state"
                             : (m.source == Source::hyperfine || m.source == Source::gbench) ? "name"
                                                                                               : nullptr;
    for (const char* k : {"name", "state"}) {
      auto it = keys.find(k);
      if (it == keys.end()) continue;
      if (!filter_key || std::string_view(k) != filter_key) {
        error(at(it->second.first.Mark()),
              filter_key ? fmt::format("metric '{}': '{}' does not apply to '{}' (it takes '{}')", m.name, k, key, filter_key)
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
      try {
        std::regex re(substitute_regex(plan, first, *f), std::regex::ECMAScript);
        m.filter = *f;
      } catch (const std::regex_error& e) {
        error(at(it->second.second.Mark()), fmt::format("the {} regex of metric '{}' does not compile: {}", k, m.name, e.what()),
              placeholder_hint(plan, *f));
        ok = false;
      }
    }
    if (m.source == Source::gbench && !keys.count("name")) {
      error(at(v.Mark()), fmt::format("metric '{}' needs 'name', a regex selecting the benchmark rows", m.name),
            "e.g. {gbench: real_time, name: '^BM_decode/64$'}");
      ok = false;
    }

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
        error(at(n.Mark()), fmt::format("metric '{}': scale must be a finite non-zero number, not {}", m.name, n.Scalar()),
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

  std::vector<std::string> metric_names(const Plan& plan) const {
    std::vector<std::string> names;
    for (const auto& m : plan.metrics) names.push_back(m.name);
    return names;
  }

  void load_gates(const YAML::Node& n, Plan& plan) {
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

  std::optional<double> percent(const YAML::Node& n, const char* what) {
    if (!n.IsScalar()) {
      error(at(n.Mark()), fmt::format("{} must be a percentage such as -18%", what));
      return std::nullopt;
    }
    std::string s(util::trim(n.Scalar()));
    if (!s.empty() && s.back() == '%') s.pop_back();
    auto v = util::parse_double(s);
    if (!v || !std::isfinite(*v)) {
      error(at(n.Mark()), fmt::format("{} must be a percentage such as -18%, not '{}'", what, n.Scalar()));
      return std::nullopt;
    }
    return v;
  }

  void load_prediction(const YAML::Node& n, Plan& plan) {
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
        error(at(it->second.second.Mark()), fmt::format("prediction names unknown metric '{}'{}", *s, util::suggestion_suffix(*s, metric_names(plan))));
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

  void load_model(const YAML::Node& n, Plan& plan) {
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
      error(at(keys.at("metric").second.Mark()),
            fmt::format("model names unknown metric '{}'{}", m.metric, util::suggestion_suffix(m.metric, metric_names(plan))));
      return;
    }
    auto axis = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const Axis& a) { return a.name == m.axis; });
    if (axis == plan.axes.end()) {
      std::vector<std::string> names;
      for (const auto& a : plan.axes) names.push_back(a.name);
      error(at(keys.at("x").second.Mark()), fmt::format("model names unknown axis '{}'{}", m.axis, util::suggestion_suffix(m.axis, names)));
      return;
    }
    for (const auto& v : axis->values) {
      auto x = util::parse_double(v);
      if (!x || !std::isfinite(*x)) {
        error(at(keys.at("x").second.Mark()), fmt::format("model axis '{}' has the value '{}', which is not a number", m.axis, v));
        return;
      }
    }
    plan.model = m;
  }

  // The `{name}` and `{name...}` of `text` whose name is an identifier: (offset of '{', name,
  // whether it splits words).
  struct Placeholder {
    std::size_t open;
    std::string name;
    bool words;
  };
  static std::vector<Placeholder> placeholders(std::string_view text) {
    std::vector<Placeholder> out;
    for (std::size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
      auto close = text.find('}', open + 1);
      if (close == std::string::npos) break;
      std::string name(text.substr(open + 1, close - open - 1));
      const bool words = name.ends_with(kSplitSuffix);
      if (words) name.resize(name.size() - kSplitSuffix.size());
      if (util::is_identifier(name)) out.push_back({open, name, words});
    }
    return out;
  }

  static std::vector<std::string> axis_names(const Plan& plan) {
    std::vector<std::string> names;
    for (const auto& a : plan.axes) names.push_back(a.name);
    return names;
  }

  // Why a `name:`/`state:` regex with braces may not compile: a `{name}` that is no axis.
  static std::string placeholder_hint(const Plan& plan, std::string_view text) {
    auto names = axis_names(plan);
    for (const auto& p : placeholders(text)) {
      if (std::find(names.begin(), names.end(), p.name) != names.end()) continue;
      auto near = util::did_you_mean(p.name, names);
      return fmt::format("'{{{}}}' is not an axis{} {{axis}} is replaced by the cell's value (the axes: {})", p.name,
                         near ? fmt::format(", did you mean '{{{}}}'?", *near) : std::string("."), fmt::join(names, ", "));
    }
    return text.find('{') != std::string_view::npos ? "a literal brace in a regex is written \\{" : "";
  }

  // Whether the text before `pos` puts a word there first in a command: nothing but blanks
  // since the start, a line break, `|`, `;`, `&`, `(` or a backquote.
  static bool command_position(std::string_view text, std::size_t pos) {
    while (pos > 0 && (text[pos - 1] == ' ' || text[pos - 1] == '\t')) --pos;
    return pos == 0 || std::string_view("\n|;&(`").find(text[pos - 1]) != std::string_view::npos;
  }

  void check_placeholders(Plan& plan, const Location& where, const std::string& text) {
    auto names = axis_names(plan);
    std::set<std::string> warned;
    for (const auto& p : placeholders(text)) {
      const std::string written = fmt::format("{{{}{}}}", p.name, p.words ? kSplitSuffix : "");
      auto axis = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const Axis& a) { return a.name == p.name; });
      if (axis == plan.axes.end()) {
        if (auto s = util::did_you_mean(p.name, names))
          warn(where, fmt::format("command has '{}', which is not an axis and is left as it is; did you mean '{{{}{}}}'?", written,
                                  *s, p.words ? kSplitSuffix : ""));
        continue;
      }
      // A quoted value with a blank, first in a command, names a program called "gzip -6".
      auto spaced = std::find_if(axis->values.begin(), axis->values.end(), [](const std::string& v) {
        return util::trim(v).find_first_of(" \t") != std::string_view::npos;
      });
      if (p.words || spaced == axis->values.end() || !command_position(text, p.open) || !warned.insert(p.name).second) continue;
      warn(where,
           fmt::format("command puts {{{}}} first in a command, and its value '{}' has a blank: it is one shell-quoted word, "
                       "so the shell looks for a program named '{}'",
                       p.name, *spaced, *spaced),
           fmt::format("write {{{}...}} to split the value into words (each still shell-quoted)", p.name));
    }
  }

  // The build runs once per code tree (or, without revisions, once per invocation), never for a
  // cell: no `{name}` in it is replaced, so each one is reported, as a command's near-miss is.
  // `${NAME}` is the shell's and is left alone.
  void check_build_placeholders(const Plan& plan, const Location& where, const std::string& text) {
    auto names = axis_names(plan);
    std::set<std::string> warned;
    for (const auto& p : placeholders(text)) {
      if (p.open > 0 && text[p.open - 1] == '$') continue;
      const std::string written = fmt::format("{{{}{}}}", p.name, p.words ? kSplitSuffix : "");
      if (!warned.insert(written).second) continue;
      if (std::find(names.begin(), names.end(), p.name) != names.end()) {
        warn(where, fmt::format("build has '{}', which is left as it is: the build runs once per code tree, not per cell", written),
             "give what varies per cell to the command (or env:); the build cannot depend on an axis");
      } else if (auto s = util::did_you_mean(p.name, names)) {
        warn(where, fmt::format("build has '{}', which is not an axis and is left as it is; did you mean '{{{}{}}}'?", written, *s,
                                p.words ? kSplitSuffix : ""),
             "the build runs once per code tree, not per cell: no {axis} in it is replaced");
      } else {
        warn(where, fmt::format("build has '{}', which is not an axis and is left as it is", written),
             "no {name} in build: is replaced (it runs once per code tree, not per cell); write ${NAME} for a shell variable");
      }
    }
  }

  std::string m_file;
  fs::path m_root;
  std::vector<Diagnostic> m_errors;
  std::vector<Diagnostic> m_warnings;
  Location m_warmup_where;  // the plan's `warmup:` value: its metrics' default
};

}  // namespace

Plan parse_plan(std::string_view text, const std::string& display_name, const fs::path& repo_root) {
  return Loader(display_name, repo_root).load(text);
}

namespace {
constexpr const char* kStartPlan =
    "abtrack.yaml at the repository root with experiment:, doc:, axes:, command: and metrics: "
    "(abtrack's docs/plan.md describes every key)";
}  // namespace

fs::path find_plan(const fs::path& dir, const fs::path& root) {
  const fs::path top = fs::weakly_canonical(root);
  fs::path here = fs::weakly_canonical(dir);
  // Inside the work tree the search stops at its root; elsewhere (a .git folder) it looks only here.
  const auto rel = here.lexically_relative(top).generic_string();
  const bool inside = !rel.empty() && rel != ".." && !rel.starts_with("../");
  for (fs::path d = here;; d = d.parent_path()) {
    std::error_code ec;
    if (fs::exists(d / kPlanFile, ec)) return d / kPlanFile;
    if (!inside || d == top || d == d.parent_path()) break;
  }
  throw Error(Exit::usage,
              here == top || !inside
                  ? fmt::format("no plan: no {} in {}", kPlanFile, here.string())
                  : fmt::format("no plan: no {} in {} or in a folder above it up to the repository root {}", kPlanFile,
                                here.string(), top.string()),
              fmt::format("name the plan with -p FILE, or start one: write {}", kStartPlan));
}

Plan load_plan(const fs::path& file, const std::string& display_name, const fs::path& repo_root) {
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw Error(Exit::usage, fmt::format("no plan at {}", display_name),
                fmt::format("-p takes a path from the current directory ({}); to start a plan, write {}",
                            fs::current_path(ec).string(), kStartPlan));
  if (!fs::is_regular_file(file, ec)) throw Error(Exit::usage, fmt::format("the plan {} is not a file", display_name));
  std::string text = util::read_file(file);
  Plan plan = parse_plan(text, display_name, repo_root);
  plan.file = fs::absolute(file).lexically_normal();
  return plan;
}

}  // namespace abtrack::plan
