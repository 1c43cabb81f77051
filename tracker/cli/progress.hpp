#pragma once
// Progress of `step`/`run` on stderr: one line redrawn in place on a terminal (cell i/N,
// repeat, elapsed, ETA from the cells done so far), plain lines otherwise (and with -v, whose
// streamed output would tear a redrawn line), nothing with -q.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "cli/args.hpp"
#include "record/record.hpp"
#include "runner/run.hpp"
#include "util/process.hpp"

namespace abtrack::cli {

// Prints "abtrack: warning: ..." to stderr.
void warn(const std::string& message);
// Prints a progress/info line to stderr unless quiet.
void info(const GlobalOptions& g, const std::string& message);

// Whether output to `fd` may be coloured: a terminal, NO_COLOR unset (or empty) and TERM not "dumb".
bool colour_enabled(int fd);

// "run 7 ...: pass ..." with the outcome word coloured (green pass, red fail, yellow invalid)
// when `colour`; `line` unchanged otherwise.
std::string coloured_result(const std::string& line, runner::Outcome outcome, bool colour);

// "0:07", "12:03", "1:02:03".
std::string format_duration(double seconds);

// What explains an invalid run: the last lines (at most 5, each cut to 160 characters) of the
// stderr of the command that failed (the setup's when it failed), as the record keeps it, each
// line indented under a "  stderr:" header, with a newline after each; lines the reason quotes
// already are left out. "" for other runs, or when there is nothing to show.
std::string stderr_excerpt(const record::Record& rec);

// For -v: writes a command's output to abtrack's stderr as it arrives. With a `prefix`
// ("[x=1] ", for cells running side by side) each line is written whole, after the prefix;
// without one the bytes go through as they come.
util::OutputFn output_echo(std::string prefix = {});

class Progress {
 public:
  // `total`: the cells this invocation runs. A terminal on stderr gets the redrawn line.
  Progress(const GlobalOptions& g, std::size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Cell `index` (0-based) starts.
  void start_cell(std::size_t index, const std::string& label);
  // Invocation `repeat` (0-based) of `repeats` of the current cell starts.
  void invocation(int repeat, int repeats);
  // The current cell is measured: its time counts for the ETA; the line is cleared so that
  // what follows (warnings, the result) prints cleanly.
  void cell_measured();
  // Prints a run's result line on stdout (coloured on a terminal without NO_COLOR), and under
  // it `details` (stderr_excerpt) as it is.
  void print_result(const std::string& line, runner::Outcome outcome, const std::string& details = {});

  // The status text of the line: "[2/12] warps=4 batch=64  repeat 1/3  elapsed 0:12  ETA 1:05".
  std::string status_text() const;

 private:
  void draw_locked();
  void clear_locked();
  void tick();

  bool m_quiet;
  bool m_tty;
  std::size_t m_total;
  std::size_t m_index = 0, m_done = 0;
  int m_repeat = 0, m_repeats = 1;
  std::string m_label;
  bool m_active = false;  // a cell is running: the line is shown
  std::size_t m_shown = 0;  // characters of the line on screen
  std::chrono::steady_clock::time_point m_start, m_cell_start;
  double m_done_seconds = 0;  // time of the measured cells
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::thread m_ticker;
};

}  // namespace abtrack::cli
