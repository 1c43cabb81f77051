#pragma once
// What abtrack shows on the terminal: warnings and info lines on stderr, results on stdout, and
// while cells run one after the other their progress on stderr: one line redrawn in place on a
// terminal (cell i/N, repeat, elapsed, ETA from the cells done so far), plain lines otherwise
// (and with -v, whose streamed output would tear a redrawn line), nothing with -q.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cli/args.hpp"
#include "experiment/progress.hpp"
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

// The progress of cells measured one after the other.
class ProgressLine {
 public:
  // `total`: the cells this invocation runs. A terminal on stderr gets the redrawn line.
  ProgressLine(const GlobalOptions& g, std::size_t total);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

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
  bool m_active = false;    // a cell is running: the line is shown
  std::size_t m_shown = 0;  // characters of the line on screen
  std::chrono::steady_clock::time_point m_start, m_cell_start;
  double m_done_seconds = 0;  // time of the measured cells
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::thread m_ticker;
};

// The engine's Progress on the terminal, as the global options ask: info lines unless -q,
// the commands' output with -v (output_echo), a ProgressLine while cells run one after the other.
// A result is coloured (on a terminal without NO_COLOR) while that line is up.
class TerminalProgress final : public experiment::Progress {
 public:
  explicit TerminalProgress(const GlobalOptions& g) : m_global(g) {}

  void info(const std::string& message) override;
  void warn(const std::string& message) override;
  void print(const std::string& text) override;
  void result(const std::string& line, const record::Record& rec) override;
  util::OutputFn command_output(const std::string& prefix) override;
  void cells_started(std::size_t total) override;
  void cell_started(std::size_t index, const std::string& label) override;
  void invocation_started(int repeat, int repeats) override;
  void cell_measured() override;
  void cells_done() override;

 private:
  GlobalOptions m_global;
  std::unique_ptr<ProgressLine> m_line;  // while cells run one after the other
};

}  // namespace abtrack::cli
