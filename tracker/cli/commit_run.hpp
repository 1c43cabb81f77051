#pragma once
// Turning a measured run into its record, its document update and its one commit.
#include <string>

#include "cli/context.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"

namespace abtrack::cli {

// Refuses (Error(environment), before anything runs) when the document or a record of the
// experiment has uncommitted changes, naming the files and what to do; checks the identity.
void preflight(const Context& ctx);

// The code a run measures: HEAD and, when the work tree differs from it, a snapshot commit.
record::Code code_identity(const Context& ctx);

// Commits `run` as the next run of the experiment: the record and the re-rendered document,
// one commit, with the trailers of the contract. Returns the committed record.
record::Record commit_run(Context& ctx, const runner::Run& run, const record::Code& code);

// The commit message of a record (subject, body, trailers).
std::string commit_message(const plan::Plan& plan, const record::Record& rec);

// One line for the terminal: "run 7 warps=8 batch=64: pass  time_us 41.2 (-14.0% better)".
std::string result_line(const plan::Plan& plan, const record::Record& rec);

}  // namespace abtrack::cli
