#pragma once
// The plan loader, internal to plan/ (plan/load.hpp is the interface). Its parts, one file each:
// load.cpp the top-level keys and the checks across them; load_yaml.cpp reading YAML nodes
// (mappings, scalars, numbers, paths, cells) and collecting diagnostics; load_run.cpp how the
// cells run (axes, revisions, env, artifacts, scale-out, placeholders); load_metrics.cpp what is
// read and judged (metrics, warm-up, gates, prediction, model).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "plan/plan.hpp"
#include "util/error.hpp"

namespace abtrack::plan {

// Collects every mistake of one plan text (Diagnostic: FILE:LINE:COL, message, hint) and throws
// them together from finish().
class Loader {
 public:
  Loader(std::string file, std::filesystem::path repo_root) : m_file(std::move(file)), m_root(std::move(repo_root)) {}

  Plan load(std::string_view text);

 private:
  // load()'s parts, in order: what the experiment is and runs (experiment, title, doc,
  // template, workdir, the texts, setup, command); how it runs (timeout, repeats, env, alpha,
  // min_effect, revisions, build, rounds, budget); the sections (axes, metrics, exclude,
  // baseline, gates, prediction, model, artifacts, plot, scale-out, throttle); then, when all of
  // that is right, the checks across keys.
  void load_identity(Plan& plan);
  void load_settings(Plan& plan);
  void load_sections(Plan& plan);
  void check_across(Plan& plan);
  // The top-level key's value node (null when absent), and where it is (the file when absent).
  const YAML::Node* get(const char* key) const;
  Location mark(const char* key) const;
  // `key:` a positive number of seconds, or a whole number from 1 to `most`.
  void seconds(const char* key, double& field);
  void whole(const char* key, int most, int& field);

 private:
  using KeyMap = std::map<std::string, std::pair<YAML::Node, YAML::Node>>;

  Location at(const YAML::Mark& m) const;
  void error(Location where, std::string msg, std::string hint = {});
  // Whether `s` holds a C0 control character or DEL (a tab allowed where `tab_ok`).
  static bool has_control(std::string_view s, bool tab_ok);

  void warn(Location where, std::string msg, std::string hint = {});
  void missing(const char* key, std::string hint);
  void finish();

  // Checks a mapping's keys (unknown, duplicate) and returns them by name.
  KeyMap mapping(const YAML::Node& n, const std::vector<std::string>& allowed, const char* what);

  // The key nodes of a mapping in document order, with duplicate keys reported.
  std::vector<std::pair<YAML::Node, YAML::Node>> ordered(const YAML::Node& n, const char* what);

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& what);
  std::optional<double> number(const YAML::Node& n, const std::string& what);
  static std::string kind(const YAML::Node& n);

  // A path inside the repository, normalised, '/'-separated; symlinks that leave it are refused.
  std::string repo_path(const YAML::Node& n, const std::string& raw, const char* what, bool allow_root);

  // `artifacts: [path, ...]`: repo-relative files whose SHA-256 each run records; {axis} allowed.
  // An entry may be `{path: P, build_log: L}`: L holds ptxas's output for P (spill warnings).
  void load_artifacts(const YAML::Node& n, Plan& plan);

  // jobs, gpus, executor, slurm (docs/SCALING.md).
  void load_scale_out(const YAML::Node* jobs, const YAML::Node* gpus, const YAML::Node* executor,
                      const YAML::Node* slurm, Plan& plan);

  void load_env(const YAML::Node& n, Plan& plan);

  // `revisions: {name: revision}`: the `rev` axis, first.
  void load_revisions(const YAML::Node& n, Plan& plan);

  void load_axes(const YAML::Node& n, Plan& plan);

  std::optional<Assignment> assignment(const YAML::Node& n, const Plan& plan, const char* what);

  void load_metrics(const YAML::Node& n, Plan& plan);

  // `warmup:` (the plan's or a metric's): how many samples of every invocation are dropped.
  void load_warmup(const YAML::Node& n, const std::string& what, int& field, Location& where);

  // `kernel:` (a regex, {axis} allowed) and `launch:` (an integer >= 0), which only ncu takes.
  bool load_ncu_keys(Metric& m, const YAML::Node& v, const KeyMap& keys, const Plan& plan);

  // `NAME: {ncu: SET, kernel: ..., launch: ...}`: one metric per entry of the set, NAME_<suffix>,
  // each with the set's unit and the same kernel and launch.
  void expand_ncu_set(const Metric& m, const KeyMap& keys, Plan& plan);

  // The source of one metric: exactly one format key, with its `name:`/`state:`, `file:` and
  // `scale:`. False when it has a mistake (recorded as an error).
  bool load_metric_source(Metric& m, const YAML::Node& v, const KeyMap& keys, const Plan& plan);
  bool check_selector(const Metric& m, const YAML::Node& src);
  bool load_metric_filter(Metric& m, const KeyMap& keys, const std::string& key, const Plan& plan);
  bool load_file_and_scale(Metric& m, const KeyMap& keys);

  std::vector<std::string> metric_names(const Plan& plan) const;

  void load_gates(const YAML::Node& n, Plan& plan);

  std::optional<double> percent(const YAML::Node& n, const char* what);

  void load_prediction(const YAML::Node& n, Plan& plan);

  void load_model(const YAML::Node& n, Plan& plan);

  // The `{name}` and `{name...}` of `text` whose name is an identifier: (offset of '{', name,
  // whether it splits words).
  struct Placeholder {
    std::size_t open;
    std::string name;
    bool words;
  };
  static std::vector<Placeholder> placeholders(std::string_view text);

  static std::vector<std::string> axis_names(const Plan& plan);

  // Why a `name:`/`state:` regex with braces may not compile: a `{name}` that is no axis.
  static std::string placeholder_hint(const Plan& plan, std::string_view text);

  // Whether the text before `pos` puts a word there first in a command: nothing but blanks
  // since the start, a line break, `|`, `;`, `&`, `(` or a backquote.
  static bool command_position(std::string_view text, std::size_t pos);

  void check_placeholders(Plan& plan, const Location& where, const std::string& text);

  // The build runs once per code tree (or, without revisions, once per invocation), never for a
  // cell: no `{name}` in it is replaced, so each one is reported, as a command's near-miss is.
  // `${NAME}` is the shell's and is left alone.
  void check_build_placeholders(const Plan& plan, const Location& where, const std::string& text);

  std::string m_file;
  std::filesystem::path m_root;
  std::vector<Diagnostic> m_errors;
  std::vector<Diagnostic> m_warnings;
  KeyMap m_keys;            // the plan's top-level keys
  Location m_warmup_where;  // the plan's `warmup:` value: its metrics' default
};

}  // namespace abtrack::plan
