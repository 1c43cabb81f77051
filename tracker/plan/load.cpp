// Loading a plan: the top-level keys, the checks across them, finding and reading the file.
#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "plan/load.hpp"
#include "plan/loader.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::plan {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTopKeys = {
    "experiment", "title",   "doc",      "template", "what",       "why",   "how",           "prediction",
    "axes",       "exclude", "baseline", "setup",    "command",    "env",   "timeout",       "repeats",
    "metrics",    "gates",   "workdir",  "alpha",    "min_effect", "model", "artifacts",     "plot",
    "jobs",       "gpus",    "executor", "slurm",    "revisions",  "build", "build_timeout", "rounds",
    "max_rounds", "budget",  "warmup",   "throttle"};

constexpr std::size_t kMaxPlanBytes = 1 << 20;

// [a-z0-9][a-z0-9._-]{0,63}
bool valid_experiment(std::string_view s) {
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 64 || !lower_digit(s[0])) return false;
  for (char c : s)
    if (!lower_digit(c) && c != '.' && c != '_' && c != '-') return false;
  return true;
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
  return fmt::format(
      "the value of '{}' holds ': ', '{{' or '[', which YAML reads as structure: quote the whole value, "
      "e.g. {}: \"{}\" (or in single quotes, each ' doubled), or write it as a block scalar: {}: | and the "
      "value on the next line, indented",
      key, key, escaped, key);
}

}  // namespace

Plan Loader::load(std::string_view text) {
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
  m_keys = mapping(root, kTopKeys, "plan key");
  load_identity(plan);
  load_settings(plan);
  load_sections(plan);
  if (m_errors.empty()) check_across(plan);
  finish();
  return plan;
}

const YAML::Node* Loader::get(const char* key) const {
  auto it = m_keys.find(key);
  return it == m_keys.end() ? nullptr : &it->second.second;
}

Location Loader::mark(const char* key) const { return get(key) ? at(get(key)->Mark()) : Location{m_file, 0, 0}; }

void Loader::seconds(const char* key, double& field) {
  if (auto n = get(key)) {
    if (auto v = number(*n, key); v && !(*v > 0 && std::isfinite(*v)))
      error(at(n->Mark()), fmt::format("{} must be a positive number of seconds, not {}", key, n->Scalar()));
    else if (v) field = *v;
  }
}

void Loader::whole(const char* key, int most, int& field) {
  if (auto n = get(key)) {
    if (auto v = number(*n, key); v && !(*v >= 1 && *v <= most && std::floor(*v) == *v))
      error(at(n->Mark()), fmt::format("{} must be a whole number from 1 to {}, not {}", key, most, n->Scalar()));
    else if (v) field = static_cast<int>(*v);
  }
}

void Loader::load_identity(Plan& plan) {
  if (auto n = get("experiment")) {
    plan.experiment = scalar(*n, "experiment").value_or("");
    if (n->IsScalar() && plan.experiment.empty())
      error(at(n->Mark()), "experiment name is empty", "e.g. experiment: occupancy");
    if (!plan.experiment.empty() &&
        (!valid_experiment(plan.experiment) || plan.experiment.find("..") != std::string::npos))
      error(
          at(n->Mark()), fmt::format("experiment name '{}' is not valid", plan.experiment),
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
      error(at(n->Mark()),
            fmt::format("doc '{}' is inside {}/, where abtrack keeps its records", plan.doc, kRunsFolder),
            "put the A/B document elsewhere, e.g. doc: AB.md");
      plan.doc.clear();
    }
    std::error_code ec;
    if (!plan.doc.empty() && fs::is_directory(m_root / plan.doc, ec)) {
      error(at(n->Mark()), fmt::format("doc '{}' is a folder", plan.doc),
            "name the markdown file, e.g. doc: " + plan.doc + "/AB.md");
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
        error(
            at(n->Mark()), fmt::format("template '{}' is not a file", *plan.template_path),
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
      if (!plan.workdir.empty() && !get("setup") && !get("build") && !get("revisions") &&
          !fs::is_directory(m_root / plan.workdir, ec))
        error(at(n->Mark()), fmt::format("workdir '{}' is not a folder", plan.workdir),
              "the folder the command runs in, from the repository root");
    }
  for (auto [key, field] : {std::pair{"what", &plan.what},
                            {"why", &plan.why},
                            {"how", &plan.how},
                            {"setup", &plan.setup},
                            {"command", &plan.command}})
    if (auto n = get(key)) *field = scalar(*n, key).value_or("");
  if (!get("command")) missing("command", "give the command that runs one cell, e.g. command: ./bench --warps {warps}");
  else if (get("command")->IsScalar() && util::trim(plan.command).empty()) error(mark("command"), "command is empty");
}

void Loader::load_settings(Plan& plan) {
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
      error(at(n->Mark()),
            fmt::format("min_effect must be a percentage from 0% to below 100% (e.g. 0.5%), not {}", n->Scalar()));
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
    else
      error(at(n->Mark()),
            fmt::format("budget must be a duration, not '{}'", n->IsScalar() ? n->Scalar() : "a list or map"),
            "e.g. budget: 30m, 2h, 1h30m or 90s");
  }
  // Without revisions a build runs in the work tree before the cells, as a setup does.
  if (plan.revisions.empty() && !util::trim(plan.build).empty())
    plan.setup = util::trim(plan.setup).empty() ? plan.build : plan.build + " && " + plan.setup;
}

void Loader::load_sections(Plan& plan) {
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
        else if (k.Scalar() != "y")
          error(at(k.Mark()), fmt::format("plot has no key '{}'", k.Scalar()), "plot: {y: log} or {y: linear}");
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
    else if (v)
      error(at(n->Mark()),
            fmt::format("throttle must be warn or invalid, not '{}'{}", *v,
                        util::suggestion_suffix(*v, {"warn", "invalid"})),
            "throttle: warn flags runs the GPU throttled; throttle: invalid makes them invalid");
  }
}

void Loader::check_across(Plan& plan) {
  if (plan.cells().empty()) error(mark("exclude"), "every cell of the sweep is excluded");
  if (plan.baseline) {
    bool any = false;
    for (const auto& c : plan.cells()) any |= matches(plan, c, *plan.baseline);
    if (!any) error(mark("baseline"), "the baseline matches no cell that is not excluded");
  }
  if (plan.rounds_auto)
    if (auto problem = auto_rounds_problem(plan)) error(mark("rounds"), problem->first, problem->second);
  if (plan.prediction && !plan.baseline)
    warn(mark("prediction"),
         "the prediction is judged against the baseline, and the plan names none: it stays unjudged",
         "add baseline: {axis: value}");
  check_placeholders(plan, mark("command"), plan.command);
  check_build_placeholders(plan, mark("build"), plan.build);
  plan.warnings = m_warnings;
}

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
