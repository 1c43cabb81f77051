#pragma once
// How the engine tells people what it is doing. The engine never writes to the terminal itself:
// every line it has for people goes through a Progress, which the command line implements
// (cli/progress.hpp: stderr, stdout, a redrawn line) and tests replace with one that records.
#include <cstddef>
#include <string>

#include "record/record.hpp"
#include "util/process.hpp"

namespace abtrack::experiment {

class Progress {
 public:
  virtual ~Progress() = default;

  // What is happening ("setup: make", "revision base: build: make"); a quiet user does not see it.
  virtual void info(const std::string& message) = 0;
  // What the user should know or act on ("could not snapshot the work tree ..."); always shown.
  virtual void warn(const std::string& message) = 0;
  // `text` on standard output as it is ("submitted slurm job 42 (3 cells)\n").
  virtual void print(const std::string& text) = 0;
  // A run's result on standard output: `line` (result_line, dry_result_line), then for an
  // invalid `rec` what explains it.
  virtual void result(const std::string& line, const record::Record& rec) = 0;
  // Where the commands' output goes as it arrives besides being captured (-v): each line after
  // `prefix` when there is one (cells running side by side), else the bytes as they come. An
  // empty function: nowhere.
  virtual util::OutputFn command_output(const std::string& prefix) = 0;

  // Cells measured one after the other (run_serial): `total` of them, until cells_done().
  virtual void cells_started(std::size_t total) = 0;
  // Cell `index` (0-based) of them starts; `label` names it ("round 2/6 rev=mine x=1").
  virtual void cell_started(std::size_t index, const std::string& label) = 0;
  // Invocation `repeat` (0-based) of `repeats` of the current cell starts.
  virtual void invocation_started(int repeat, int repeats) = 0;
  // The current cell is measured: what follows about it are warnings and its result.
  virtual void cell_measured() = 0;
  // The cells are done (or stopped by an error).
  virtual void cells_done() = 0;
};

}  // namespace abtrack::experiment
