#pragma once
// The experiment plan: value types, cells, placeholder substitution. Loading is in load.hpp.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace abtrack::plan {

// An axis of the sweep: its values as written in the plan (scalars, compared as text).
struct Axis {
  std::string name;
  std::vector<std::string> values;
  Location where;
};

// A partial assignment of axes to values (baseline, exclude entries), in plan axis order.
using Assignment = std::vector<std::pair<std::string, std::string>>;

// One cell of the sweep: a value for every axis, in plan axis order.
struct Cell {
  std::vector<std::string> values;
  bool operator==(const Cell&) const = default;
};

enum class Better { none, lower, higher };
// The format a metric is read in: `json:`, `regex:`, a benchmark tool's JSON output, or `ncu:`
// (a counter read by one extra invocation under Nsight Compute, runner/profile.hpp).
enum class Source { json, regex, hyperfine, gbench, nvbench, ncu };

// How a metric is read from a command's stdout, or from a file the command wrote.
struct Metric {
  std::string name;
  Source source = Source::json;
  std::string
      selector;  // dotted JSON path, regex (group 1 is the sample), hyperfine/gbench field, nvbench tag or ncu metric
  std::string filter;  // `name:` (hyperfine, gbench) or `state:` (nvbench) regex; empty: every entry
  std::string file;    // `file:` path, relative to the command's working directory, with {axis}; empty: stdout
  double scale = 1;    // every sample is multiplied by it
  Better better = Better::none;
  std::string unit;
  std::string kernel;  // ncu: `kernel:` regex (ncu's -k regex:, with {axis}); empty: every kernel
  int launch = 0;      // ncu: `launch:` which matching launch is profiled (ncu's --launch-skip)
  Location where;
  // The first samples of every invocation dropped from the analysis as warm-up (the metric's
  // `warmup:`, else the plan's), and where that count was given (the run's error names it).
  int warmup = 0;
  Location warmup_where;
};

// A named set of ncu metrics (`ncu: occupancy`): a plan metric NAME with it becomes one metric
// per entry, NAME_<suffix>. Null for a name that is not a set.
struct NcuSetEntry {
  const char* suffix;
  const char* metric;
  const char* unit;
};
const std::vector<NcuSetEntry>* ncu_set(std::string_view name);

enum class Op { lt, le, gt, ge, eq, ne };

// "metric OP number": must hold for every sample of the metric.
struct Gate {
  std::string text;
  std::string metric;
  Op op = Op::le;
  double threshold = 0;
  Location where;
};

// "change -18%, expected range [-25%, -15%]" for one metric.
struct Prediction {
  std::string metric;
  double change_pct = 0;
  std::optional<std::pair<double, double>> range_pct;
};

// `model: {metric: M, x: AXIS}`: fit M = fixed + marginal * x per variant.
struct Model {
  std::string metric;
  std::string axis;
};

// `executor:` where cells run.
enum class ExecutorKind { local, slurm };

// `throttle:` what an invocation the GPU throttled while busy makes of its run (runner/watch.hpp):
// warn (the run stands, flagged in its result line and the document) or invalid.
enum class Throttle { warn, invalid };

// `slurm:` how cells are submitted as one job array (docs/SCALING.md).
struct SlurmOptions {
  std::string partition;           // --partition; empty: the cluster's default
  std::string gres;                // --gres, e.g. "gpu:1"
  std::string time;                // --time, e.g. "10" (minutes) or "1:00:00"
  int max_parallel = 0;            // the %P of --array=0-N%P; 0: no limit
  std::string account;             // --account
  std::vector<std::string> extra;  // more sbatch arguments, as given
  std::string dir;                 // result folder (absolute, or repo-relative); empty: .git/abtrack/slurm
};

// What an `artifacts:` entry given as a mapping adds to its path.
struct ArtifactOptions {
  std::string build_log;  // `build_log:` ptxas's output for it, repo-relative with {axis}; empty: none
  std::string kernel;     // `kernel:` regex: the kernels whose compiled facts are recorded; empty: all
};

// The top-level folder of every experiment's records (runs/<experiment>/): data, not code, so
// it never makes the work tree dirty and stays out of snapshots.
inline constexpr std::string_view kRunsFolder = "runs";
// The axis `revisions:` makes.
inline constexpr std::string_view kRevAxis = "rev";

struct Plan {
  std::filesystem::path file;       // absolute path of the plan file
  std::string sha256;               // of the plan file's bytes
  std::filesystem::path repo_root;  // absolute work tree root the plan was resolved against

  std::string experiment;
  std::string title;
  std::string doc;                           // repo-relative, '/'-separated
  std::optional<std::string> template_path;  // repo-relative
  std::string what, why, how;
  std::optional<Prediction> prediction;
  std::vector<Axis> axes;
  std::vector<Assignment> exclude;
  std::optional<Assignment> baseline;
  std::string setup;
  std::string command;
  // `revisions:` name -> git revision (or WORKTREE), plan order: the values of the `rev` axis,
  // which is then the first axis. Empty: the plan measures the work tree as it is.
  std::vector<std::pair<std::string, std::string>> revisions;
  std::string build;               // `build:` run once per code tree (with revisions), else like setup
  double build_timeout_s = 3600;   // `build_timeout:`
  int rounds = 0;                  // `rounds:` for `run`; 0: not given (1, or 10 with revisions)
  bool rounds_auto = false;        // `rounds: auto`: rounds until each comparison is decided
  int max_rounds = 20;             // `max_rounds:` the most rounds `rounds: auto` runs
  std::optional<double> budget_s;  // `budget:` the wall time `rounds: auto` may spend
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;  // repo-relative; empty: the repository root
  double timeout_s = 600;
  int repeats = 1;
  int warmup = 0;               // `warmup:` each metric's default (Metric::warmup holds the one that applies)
  double alpha = 0.05;          // significance level of comparisons
  double min_effect_pct = 0.5;  // changes smaller than this are "equivalent"
  std::vector<Metric> metrics;
  std::vector<Gate> gates;
  std::optional<Model> model;
  std::vector<std::string> artifacts;             // repo-relative paths with {axis}; hashed after each run
  std::vector<ArtifactOptions> artifact_options;  // each artifact's (same order)
  bool plot = true;                               // `plot: false`: no SVG plot beside the document
  std::optional<bool> plot_log_y;                 // `plot: {y: log|linear}`; unset: log when values span > a decade
  int jobs = 1;                                   // cells run at once by the local executor
  std::vector<std::string> gpus;                  // GPU ids handed out one per running cell (CUDA_VISIBLE_DEVICES)
  ExecutorKind executor = ExecutorKind::local;
  Throttle throttle = Throttle::warn;  // `throttle:`
  SlurmOptions slurm;
  std::vector<Diagnostic> warnings;  // non-fatal findings of the loader

  // The cells of the sweep in plan order (first axis slowest), excluded cells left out.
  std::vector<Cell> cells() const;
  // Whether `cell` is matched by an exclude entry.
  bool excluded(const Cell& cell) const;
  // "warps=8 stages=3 batch=64".
  std::string label(const Cell& cell) const;
  // The baseline cell `cell` is compared with (baseline values on the axes the baseline names,
  // the cell's own elsewhere), or nullopt without a baseline or when that cell is excluded.
  std::optional<Cell> baseline_for(const Cell& cell) const;
  // Parses "k=v,k=v" naming every axis into a cell. Throws Error(usage) with did-you-mean.
  Cell parse_cell(std::string_view spec) const;
  // The metric called `name`, or nullptr.
  const Metric* metric(std::string_view name) const;
  // The repo-relative folder of the run records: "runs/<experiment>".
  std::string runs_dir() const { return std::string(kRunsFolder) + "/" + experiment; }
  // The absolute working directory of commands.
  std::filesystem::path command_dir() const;
};

// True when every axis named by `a` has the cell's value.
bool matches(const Plan& plan, const Cell& cell, const Assignment& a);

// The suffix of the word-splitting placeholder: {axis...}.
inline constexpr std::string_view kSplitSuffix = "...";

// Replaces each {axis} in `text` with the cell's value, shell-quoted when `quote`, and leaves
// every other brace alone. {axis...} splits the value on blanks and shell-quotes each word when
// `quote` (`gzip -6` -> 'gzip' '-6'); without `quote` it is the value as it is, like {axis}.
std::string substitute(const Plan& plan, const Cell& cell, std::string_view text, bool quote);
// Replaces each {axis} (and {axis...}) in the regex `text` with the cell's value, its regex
// syntax characters escaped, so that the value matches itself literally.
std::string substitute_regex(const Plan& plan, const Cell& cell, std::string_view text);
// How the cell's code is run, as 16 hex digits: a hash of its command after substitution, its
// workdir and env, and the plan's setup and build. Part of a run's identity (record::Code):
// runs of one code tree with other recipes never pool. The plan's prose is not in it.
std::string recipe(const Plan& plan, const Cell& cell);
// The plan's metrics as they apply to `cell`: the {axis} of each `name:`/`state:`/`kernel:` regex
// replaced (substitute_regex). `file:` paths are replaced where the files are read (metrics::MetricFiles).
std::vector<Metric> metrics_for(const Plan& plan, const Cell& cell);
// Whether every run needs its `ncu:` metrics' values: one of them is compared (`better:`), gated
// or predicted. Otherwise a batch of rounds profiles each cell once per `run`, in its first run
// that counted (docs/plan.md, "ncu:"): the counters describe the code on the card, not the round.
bool ncu_every_run(const Plan& plan);

std::string_view to_string(Op op);
// The plan key of a metric format: "json", "regex", "hyperfine", "gbench", "nvbench".
inline std::string_view to_string(Source s) {
  switch (s) {
    case Source::json: return "json";
    case Source::regex: return "regex";
    case Source::hyperfine: return "hyperfine";
    case Source::gbench: return "gbench";
    case Source::nvbench: return "nvbench";
    case Source::ncu: return "ncu";
  }
  return "json";
}
std::string_view to_string(Better b);
// Whether `value OP threshold` holds.
bool holds(Op op, double value, double threshold);

// Why `rounds: auto` cannot run with this plan (what is wrong, and a hint), or nothing: it needs
// a baseline and a metric with `better:`, since it runs until each cell's comparison with its
// baseline is decided. Never throws.
std::optional<std::pair<std::string, std::string>> auto_rounds_problem(const Plan& plan);

}  // namespace abtrack::plan
