#pragma once
// Which code a run measures. Code is the repository's content without abtrack's data (runs/,
// the experiments' documents and plots, the plan file) and without what the commands produce
// (the plan's `artifacts:` and metric `file:` paths, and the untracked files the commands wrote
// in two runs). Two runs on byte-identical code (run alike: record::Code::recipe) share a pool
// whatever commits lie between them.
#include <optional>

#include "experiment/context.hpp"
#include "gitstore/repository.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"

namespace abtrack::experiment {

// The paths that are not code, for the plan in HEAD: `runs/`, this plan's document and plot,
// the documents and plots the other experiments' newest records name, the plan's declared
// outputs for every cell, and the outputs seen so far (.git/abtrack/outputs). Folders end in '/'.
gitstore::PathSet data_paths(const Context& ctx);

// The code a run measures: HEAD's code commit (the commit its run named, while HEAD still holds
// that code), a snapshot commit when the work tree's code differs from HEAD, and the content
// identity. `dirty` is the result of a scan just made, if any. A snapshot that cannot be made is
// a warning to `progress` (the code is then recorded dirty without one).
record::Code code_identity(const Context& ctx, Progress& progress, std::optional<bool> dirty = std::nullopt);

// Starts watching for outputs: remembers the untracked files as they are before any command
// of this invocation runs (called by the preflight).
void watch_outputs(const Context& ctx);

// The untracked files created or changed since watch_outputs (or the last call), each while a
// command ran: written once, a file stays code (it may be the user's, made meanwhile); written
// again by a later run (the same file, or one of the same name with another cell's values) it is
// an output: added to .git/abtrack/outputs, with one warning naming it and the .gitignore lines
// that would keep it out of `git status`. `cell`: the cell whose values become '*' in those
// patterns and lines; the warning goes to `progress`. Returns the files that became outputs.
// Does nothing unless watch_outputs was called.
std::vector<std::string> note_outputs(const Context& ctx, Progress& progress, const plan::Cell* cell);

// `code` (taken before a run) without the files that became outputs during it: the snapshot's
// tree without the data paths as they are now, and no snapshot at all when only outputs made it.
record::Code without_outputs(const Context& ctx, record::Code code);

}  // namespace abtrack::experiment
