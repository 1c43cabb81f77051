// `abtrack collect`: commit the runs of finished Slurm tasks; `abtrack __task`: run one task.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "experiment/commit_run.hpp"
#include "experiment/scheduler.hpp"
#include "record/record.hpp"
#include "runner/environment.hpp"
#include "runner/slurm.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace abtrack::cli {

int cmd_collect(const Args& args) {
  bool wait = false;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (args.rest[i] == "--wait") wait = true;
    else unknown_argument("collect", args.rest[i], {"--wait"});
  }
  util::install_interrupt_handlers();
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  experiment::preflight(ctx, progress);
  experiment::recover_journal(ctx, progress);
  auto r = experiment::collect_submissions(ctx, progress, wait ? 1e9 : 0);
  if (r.waiting > 0)
    info(args.global, fmt::format("{} run{} committed; {} task{} still pending or running", r.committed,
                                  r.committed == 1 ? "" : "s", r.waiting, r.waiting == 1 ? "" : "s"));
  else if (r.committed == 0) info(args.global, "nothing to collect");
  util::throw_if_interrupted();
  return r.any_bad ? static_cast<int>(Exit::run_failed) : 0;
}

// Runs on the compute node, from the job script: no repository, no plan, only the manifest.
int cmd_task(const Args& args) {
  if (args.rest.size() != 2) throw Error(Exit::usage, "usage: abtrack __task DIR INDEX (run by Slurm job scripts)");
  auto index = util::parse_double(args.rest[1]);
  if (!index || *index < 0) throw Error(Exit::usage, fmt::format("__task: '{}' is not an array index", args.rest[1]));
  // The node's fingerprint travels as a record's env, so the committed record names the node.
  record::Record fingerprint;
  fingerprint.env = runner::probe_environment();
  return runner::slurm::run_task(args.rest[0], static_cast<int>(*index), record::to_json(fingerprint));
}

}  // namespace abtrack::cli
