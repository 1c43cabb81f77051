#pragma once
// What every command shares: the repository, the plan, the records.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiment/progress.hpp"
#include "gitstore/repository.hpp"
#include "plan/plan.hpp"
#include "record/cache.hpp"
#include "record/record.hpp"

namespace abtrack::experiment {

// The repository (found from the current directory) and the plan.
struct Context {
  gitstore::Repository repo;
  plan::Plan plan;
  std::string plan_name;                       // as the user named it, for messages
  std::shared_ptr<record::RecordCache> cache;  // parsed records by blob id (.git/abtrack/cache/)
  // The untracked files as of the last look (code_identity.hpp: outputs); nullopt: not watching.
  mutable std::optional<std::vector<gitstore::UntrackedFile>> untracked_seen;
};

// Opens the repository containing the current directory and loads the plan: `plan_file` (-p,
// from the current directory), else the nearest abtrack.yaml from here up to the work tree's
// root. The plan's warnings go to `progress`. Throws Error.
Context open_context(const std::optional<std::string>& plan_file, Progress& progress);

// The records of the plan's experiment in a tree, sorted by run number. Parsed records are
// cached by blob id in .git/abtrack/cache/, so only new records are read and parsed. With
// Part::header a cached record comes with its header only (see record::Part).
std::vector<record::Record> load_records(const Context& ctx, const gitstore::TreeView& tree,
                                         record::Part part = record::Part::all);

// What a step needs of the history in a tree to commit its next run.
struct StepHistory {
  // The records the document and plot read (doc::records_read_in_full, with the next run last:
  // it may join an older pool), in full, sorted by run number.
  std::vector<record::Record> records;
  std::size_t runs_left_out = 0;  // the experiment's other records (doc::RenderOptions::runs_left_out)
  double command_s_left_out = 0;  // the seconds their commands took
  int last_run = 0;  // the highest run number among the record and tombstone (.dropped) file names, 0 when none
  bool has_measurement = false;  // a record of the next run's measurement (its data.id) is in the tree
};
// Reads every record's header from the cache (parsing and caching the records that are new,
// as load_records does) and only the records the document reads in full: a history of
// thousands of runs is a few dozen records in memory. `next`: the run about to be committed.
// Throws Error(environment) for a record that cannot be read or parsed.
StepHistory load_step_history(const Context& ctx, const gitstore::TreeView& tree, const record::Record& next);
// The same for HEAD's tree.
std::vector<record::Record> head_records(const Context& ctx);

// The documents of the experiments in `tree` other than `experiment`: for each, the one its
// newest record names (record::document_named; none for records written before they named it).
std::vector<std::string> other_documents(const gitstore::TreeView& tree, const std::string& experiment);

// The document text for the tree: the doc in the tree, or the template rendered from the
// plan when the tree has no doc yet.
std::string base_document(const gitstore::TreeView& tree, const Context& ctx);

// The document with its regions re-rendered from `records`; `plot`: link the plot committed
// beside it (doc::plot_path) from the summary; `runs_left_out`: see StepHistory.
std::string rendered_document(const std::string& base, const plan::Plan& plan,
                              const std::vector<record::Record>& records, bool plot = false,
                              std::size_t runs_left_out = 0, double command_s_left_out = 0);

// Whether `tree` holds the plan's plot (doc::plot_path), so the document links it.
bool tree_has_plot(const gitstore::TreeView& tree, const plan::Plan& plan);

// What `abtrack render` makes of `records`: the document `base` with its regions re-rendered,
// and the plot (none when the plan has none).
struct Rendering {
  std::string doc;
  std::optional<std::string> svg;
};
Rendering fresh_render(const Context& ctx, const std::string& base, const std::vector<record::Record>& records);

// Refuses (exit 3) before anything is written where a commit would replace something of the
// user's: a document reached through a symbolic link (the commit would put a file in place of
// the link), or a file at the plot's path that abtrack did not generate.
void check_paths_are_ours(const Context& ctx);

}  // namespace abtrack::experiment
