#pragma once
// The command table: one cmd_<name>.cpp per command.
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.hpp"
#include "cli/progress.hpp"
#include "experiment/context.hpp"

namespace abtrack::cli {

struct Command {
  std::string_view name;
  std::string_view usage;    // "step [--cell k=v,...] [--record FILE] [--metric NAME=VALUE]..."
  std::string_view summary;  // one line
  std::string_view help;     // the long text of `abtrack help NAME`
  int (*run)(const Args&);
};

// Every command, in the order `abtrack help` lists them.
const std::vector<Command>& commands();

int cmd_init(const Args& args);
int cmd_step(const Args& args);
int cmd_run(const Args& args);
int cmd_status(const Args& args);
int cmd_log(const Args& args);
int cmd_render(const Args& args);
int cmd_verify(const Args& args);
int cmd_compare(const Args& args);
int cmd_check(const Args& args);
int cmd_help(const Args& args);
int cmd_export(const Args& args);
int cmd_collect(const Args& args);
int cmd_cancel(const Args& args);
int cmd_clean(const Args& args);
int cmd_drop(const Args& args);
int cmd_bisect(const Args& args);
int cmd_task(const Args& args);  // `__task DIR INDEX`: one Slurm task, on the node (not listed)

}  // namespace abtrack::cli
