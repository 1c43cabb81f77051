#pragma once
// Turning a measured run into its record, its document update and its one commit.
#include <string>

#include "experiment/code_identity.hpp"
#include "experiment/context.hpp"
#include "experiment/revisions.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"

namespace abtrack::experiment {

// Refuses (Error(environment), before anything runs) when the document or its plot has
// uncommitted changes, naming the files and what to do; checks the identity. Returns whether
// the code differs from HEAD: anything else in the work tree but runs/ (records are data; an
// edited or untracked file there neither blocks a step nor goes into its commit). A document or
// plot that differed only in what abtrack writes is put back, with a warning to `progress`.
bool preflight(const Context& ctx, Progress& progress);

// The record of a measured run before it has a number (run 0): what the journal keeps. `rev`:
// the revision whose tree the run ran in (its artifacts are there, its build goes into the
// record); default: the work tree. What was not measured or read (an ncu profile, an artifact's
// compiled-code facts) and the outputs found (note_outputs) are warnings to `progress`.
record::Record draft_record(const Context& ctx, Progress& progress, const runner::Run& run, const record::Code& code,
                            const Revision* rev = nullptr);

// Commits a draft as the next run of the experiment: the record and the re-rendered document,
// one commit, with the trailers of the contract. Returns the committed record. A file the user
// kept edited and a detached HEAD are warnings to `progress`.
record::Record commit_run(Context& ctx, Progress& progress, const record::Record& draft);

// Journals the draft (durably, under .git/abtrack/journal/), commits it, removes the journal
// entry: a run measured but not yet committed when abtrack dies is committed by the next
// invocation (recover_journal).
record::Record journal_and_commit(Context& ctx, Progress& progress, const record::Record& draft);

// Journals the draft now (durably, locked while the handle lives) for a commit_run later: a
// parallel `run` commits in schedule order while other cells still measure. Dropping the
// handle removes the entry, so drop it only after commit_run.
std::shared_ptr<void> journal_run(Context& ctx, Progress& progress, const record::Record& draft);

// Commits the runs an earlier, killed invocation measured but did not commit (each once:
// a journal entry whose measurement is already in HEAD is only removed). Returns how many
// were committed; their result lines go to `progress` (print), an entry left in place is a warning.
int recover_journal(Context& ctx, Progress& progress);

// The commit message of a record (subject, body, trailers).
std::string commit_message(const plan::Plan& plan, const record::Record& rec);

// One line for the terminal: "run 7 warps=8 batch=64: pass  time_us 41.2 (-14.0% better)"; for a
// draft (run 0, not committed) "measured warps=8 batch=64: pass  time_us 41.2".
std::string result_line(const plan::Plan& plan, const record::Record& rec);

}  // namespace abtrack::experiment
