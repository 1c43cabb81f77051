#pragma once
// Running a shell command as its own process group, capturing stdout and stderr separately,
// with a timeout that kills the whole group. posix_spawn + poll + pidfd, as ninja does.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/expected.hpp"

namespace abtrack::util {

// Receives a command's output as it is read: `stream` 1 (stdout) or 2 (stderr) and the bytes;
// once more with no bytes when that stream has ended.
using OutputFn = std::function<void(int stream, std::string_view bytes)>;

struct ProcessSpec {
  std::string shell_command;                             // run as /bin/sh -c COMMAND
  std::filesystem::path workdir;                         // empty: the current directory
  std::vector<std::pair<std::string, std::string>> env;  // set on top of the environment
  double timeout_s = 600;                                // <= 0: no timeout
  double kill_grace_s = 2;                               // TERM, then KILL after this
  std::size_t capture_limit = 16u << 20;                 // keep at most the last N bytes
  OutputFn echo;                                         // also given the output as it arrives (-v)
  // Called once the shell is started, with its process id (which is also its process group's
  // id): a caller that may be killed outright records it, so a later process can end the group.
  std::function<void(int pid)> on_start;
};

struct ProcessResult {
  std::optional<int> exit_code;  // set when the shell exited normally
  std::optional<int> signal;     // set when it was killed by a signal
  bool timed_out = false;
  bool interrupted = false;  // SIGINT/SIGTERM reached abtrack while it ran
  double duration_s = 0;
  std::string out;              // the last capture_limit bytes of stdout
  std::string err;              // the last capture_limit bytes of stderr
  std::uint64_t out_bytes = 0;  // bytes written in all
  std::uint64_t err_bytes = 0;
  bool succeeded() const { return exit_code && *exit_code == 0 && !timed_out && !interrupted; }
};

// Runs the command to completion (or timeout / interrupt) and returns what happened. The
// command's stdin is /dev/null; it runs in a new process group, and whatever is left of that
// group when the shell exits is killed, so no background child outlives the run.
// Fails (Exit::environment) only when the process cannot be started at all.
Expected<ProcessResult> try_run_process(const ProcessSpec& spec);
// The same, throwing that failure as an Error.
ProcessResult run_process(const ProcessSpec& spec);

// Installs SIGINT/SIGTERM handlers that make run_process stop the running command's group
// and return with interrupted = true. Idempotent.
void install_interrupt_handlers();

// The signal that interrupted abtrack, or 0.
int interrupt_signal();

// Throws Interrupted when a signal has arrived.
void throw_if_interrupted();

// "signal 9 (Killed)" style name of a signal.
std::string signal_name(int sig);

}  // namespace abtrack::util
