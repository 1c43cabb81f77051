// `abtrack cancel`: scancel the experiment's outstanding Slurm job arrays.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "experiment/commit_run.hpp"
#include "experiment/scheduler.hpp"
#include "util/process.hpp"

namespace abtrack::cli {

int cmd_cancel(const Args& args) {
  for (std::size_t i = 0; i < args.rest.size(); ++i) unknown_argument("cancel", args.rest[i], {});
  util::install_interrupt_handlers();
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  experiment::preflight(ctx, progress);
  int n = experiment::cancel_submissions(ctx, progress);
  if (n == 0) {
    info(args.global, fmt::format("no slurm job of {} is outstanding", ctx.plan.experiment));
    return 0;
  }
  // Cancelled tasks become invalid runs once Slurm has ended them (SIGTERM, then KillWait).
  auto r = experiment::collect_submissions(ctx, progress, 60);
  if (r.waiting > 0)
    info(args.global, fmt::format("{} task(s) still ending; `abtrack collect` commits them", r.waiting));
  return 0;
}

}  // namespace abtrack::cli
