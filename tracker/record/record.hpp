#pragma once
// The run record (runs/<experiment>/<NNNN>.json) <-> values. docs/run-record.md documents it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "runner/cuda_facts.hpp"
#include "runner/environment.hpp"
#include "runner/run.hpp"
#include "stats/compare.hpp"
#include "util/expected.hpp"
#include "util/heap_optional.hpp"

namespace abtrack::record {

constexpr int kSchema = 1;

// Which code a run measured: HEAD's commit, whether the work tree differed, the snapshot
// commit of the work tree when it did, and the code's content identity.
struct Code {
  std::string commit;  // 40 hex digits; empty on an unborn branch
  bool dirty = false;
  std::string snapshot;  // 40 hex digits when dirty
  // The content identity: the id of the code's tree (the snapshot's, else the commit's) without
  // abtrack's data (runs/, the experiments' documents and plots) and the commands' outputs.
  // Empty in records written before it existed, and for unknown code.
  std::string tree;
  // How the code was run: a hash of the cell's command after substitution, its workdir and
  // env, the plan's setup and build (plan::recipe). Runs of one tree with other recipes ran
  // other code. Empty in records written before it existed: those compare the tree alone.
  std::string recipe;
  // For a plan with revisions: what the cell's revision named ("main", "HEAD~1", "WORKTREE"),
  // resolved to `commit`. Empty otherwise.
  std::string revision;
  // The Abtrack-Code trailer value: "<commit>", "<commit> +snapshot <sha>", or "<commit> +dirty"
  // when the work tree differed and no snapshot could be made ("unborn" for no commit).
  std::string trailer() const;
  // The same, shortened to 12 digits, for tables and warnings.
  std::string short_name() const;
  // Code nobody can name again: the work tree differed and no snapshot was made.
  bool unknown() const { return dirty && snapshot.empty(); }
  // Whether both ran the same code: the same content identity (commits that differ only in
  // data, a revert of a run commit, ... are one code); records without one compare their
  // trailers. Unknown code is the same as no other run's (a run is its own pool then). Cells
  // of one plan run other commands on the same code: this is what tells their code apart.
  bool same_code(const Code& other) const {
    if (unknown() || other.unknown()) return false;
    if (!tree.empty() && !other.tree.empty()) return tree == other.tree;
    return commit == other.commit && snapshot == other.snapshot;
  }
  // Whether two runs of one cell measured the same thing and pool: the same code, run the same
  // way (their recipes agree; a record without one is taken to agree).
  bool same_identity(const Code& other) const {
    if (!recipe.empty() && !other.recipe.empty() && recipe != other.recipe) return false;
    return same_code(other);
  }
};

// One metric of a run compared with the same metric of its baseline cell.
struct MetricComparison {
  std::string metric;
  stats::Comparison result;
};

// The run compared with the latest run of its baseline cell.
struct Comparison {
  int baseline_run = 0;
  std::string baseline_cell;              // label
  std::vector<MetricComparison> metrics;  // metrics with `better:` (or the prediction's)
  std::vector<std::string> notes;         // metrics that could not be compared, and why
};

// How a revision's code was built (a plan with revisions): the build a run measured.
struct Build {
  std::string command;
  double seconds = 0;    // how long it took
  std::string finished;  // UTC ISO-8601
  std::string log;       // its log, repo-relative (.git/abtrack/trees/<key>/build.log)
  // "cc: gcc (Debian 12.2.0-14) 12.2.0", ...: the compilers on the build's PATH (cc, c++, nvcc)
  // when it ran, which is what a build that names no other compiler uses.
  std::vector<std::string> toolchain;
};

using CellValues = std::vector<std::pair<std::string, std::string>>;

// A file the plan's `artifacts:` names, as it was after the run.
struct Artifact {
  std::string path;    // repo-relative, {axis} replaced
  std::string sha256;  // 64 hex digits; empty when the file was missing
  std::uint64_t bytes = 0;
  std::optional<runner::CudaFacts> cuda;  // its compiled-code facts; unset when missing (or older records)
};

// An artifact's `cuda` object as the record writes it, and back (or why `json` is not one).
std::string cuda_facts_to_json(const runner::CudaFacts& f);
Expected<runner::CudaFacts> parse_cuda_facts(std::string_view json);

struct Record {
  std::string experiment;
  int run = 0;
  CellValues cell;   // axis -> value, plan order
  runner::Run data;  // what happened (data.cell is only meaningful before writing)
  Code code;
  runner::Environment env;
  std::vector<Artifact> artifacts;  // plan order
  std::string plan_sha256;
  std::string abtrack_version;
  std::string doc;  // the plan's document (repo-relative) when the run was made: data, not code
  util::HeapOptional<Comparison> comparison;  // on the heap: most records in memory have none
  util::HeapOptional<Build> build;            // a revision's build; none without revisions
  // How the plan reads each metric; when set, the record lists metrics in this order with
  // their source, unit and direction (not read back from JSON).
  std::vector<plan::Metric> metric_specs;
  std::string label() const;  // "warps=8 stages=3 batch=64"
};

// "runs/<experiment>/0007.json" (4 digits, wider past 9999).
std::string record_path(const std::string& experiment, int run);
// The run number of a record file name ("0007.json" -> 7), or nullopt.
std::optional<int> run_number_of(std::string_view file_name);

// The cell of `plan` as axis -> value pairs.
CellValues cell_values(const plan::Plan& plan, const plan::Cell& cell);
// The plan cell a record belongs to, or nullopt when the plan's axes no longer match it.
std::optional<plan::Cell> plan_cell(const plan::Plan& plan, const CellValues& values);

// Serialises a record as pretty JSON with a final newline.
std::string to_json(const Record& r);
// A build as the record's `build` object, alone (kept beside a revision's tree), and back;
// nullopt for text that is not a JSON object.
std::string build_to_json(const Build& b);
std::optional<Build> parse_build(std::string_view text);

// Parses a record. `name` is used in messages. Throws Error(environment) naming the file
// when the JSON is malformed or lacks a required field.
Record parse_record(std::string_view text, const std::string& name);

// The document a record names (its `doc`: the plan's document when the run was made), read from
// the record's JSON alone, without parsing it as a Record: nullopt for text that is not a JSON
// object, or a record written before records named it. Never throws.
std::optional<std::string> document_named(std::string_view text);

}  // namespace abtrack::record
