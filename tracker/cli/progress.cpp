#include "cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace abtrack::cli {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::size_t terminal_columns() {
  struct winsize w {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 10) return w.ws_col;
  return 80;
}

// Code points, close enough to terminal columns for labels.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string fit(const std::string& s, std::size_t columns) {
  if (display_width(s) <= columns) return s;
  std::string out;
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80 && ++n > columns - 1) break;
    out += static_cast<char>(c);
  }
  return out + "…";
}

}  // namespace

bool colour_enabled(int fd) {
  const char* no = std::getenv("NO_COLOR");
  if (no && *no) return false;
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(fd) == 1;
}

std::string coloured_result(const std::string& line, runner::Outcome outcome, bool colour) {
  if (!colour) return line;
  std::string word(runner::to_string(outcome));
  std::string needle = ": " + word;
  auto pos = line.find(needle);
  if (pos == std::string::npos) return line;
  const char* code = outcome == runner::Outcome::pass ? "\033[32m" : outcome == runner::Outcome::fail ? "\033[1;31m" : "\033[33m";
  return line.substr(0, pos + 2) + code + word + "\033[0m" + line.substr(pos + needle.size());
}

std::string format_duration(double seconds) {
  long s = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

Progress::Progress(const GlobalOptions& g, std::size_t total)
    : m_quiet(g.quiet), m_tty(!g.quiet && ::isatty(STDERR_FILENO) == 1), m_total(total),
      m_start(std::chrono::steady_clock::now()), m_cell_start(m_start) {
  // The elapsed time moves on while a long cell runs: redraw once a second.
  if (m_tty) m_ticker = std::thread([this] { tick(); });
}

Progress::~Progress() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
    clear_locked();
  }
  m_wake.notify_all();
  if (m_ticker.joinable()) m_ticker.join();
}

void Progress::tick() {
  std::unique_lock lock(m_mutex);
  while (!m_stop) {
    m_wake.wait_for(lock, std::chrono::seconds(1));
    if (!m_stop && m_active) draw_locked();
  }
}

std::string Progress::status_text() const {
  std::string s = fmt::format("[{}/{}] {}", m_index + 1, m_total, m_label);
  if (m_repeats > 1) s += fmt::format("  repeat {}/{}", m_repeat + 1, m_repeats);
  s += fmt::format("  elapsed {}", format_duration(since(m_start)));
  if (m_done > 0) {
    double per_cell = m_done_seconds / static_cast<double>(m_done);
    double left = per_cell * static_cast<double>(m_total - m_done) - since(m_cell_start);
    s += fmt::format("  ETA {}", format_duration(left < 0 ? 0 : left));
  }
  return s;
}

void Progress::draw_locked() {
  if (!m_tty) return;
  std::string text = fit("abtrack: " + status_text(), terminal_columns() - 1);
  std::size_t width = display_width(text);
  // Carriage return and spaces only: no escape sequence ever reaches a NO_COLOR terminal.
  std::string pad = m_shown > width ? std::string(m_shown - width, ' ') : "";
  std::fputs(("\r" + text + pad).c_str(), stderr);
  if (!pad.empty()) std::fputs(("\r" + text).c_str(), stderr);
  std::fflush(stderr);
  m_shown = width;
}

void Progress::clear_locked() {
  if (!m_tty || m_shown == 0) return;
  std::fputs(("\r" + std::string(m_shown, ' ') + "\r").c_str(), stderr);
  std::fflush(stderr);
  m_shown = 0;
}

void Progress::start_cell(std::size_t index, const std::string& label) {
  std::lock_guard lock(m_mutex);
  m_index = index;
  m_label = label;
  m_repeat = 0;
  m_repeats = 1;
  m_cell_start = std::chrono::steady_clock::now();
  m_active = true;
  if (m_quiet) return;
  if (m_tty) draw_locked();
  else fmt::print(stderr, "abtrack: {}\n", status_text());
}

void Progress::invocation(int repeat, int repeats) {
  std::lock_guard lock(m_mutex);
  m_repeat = repeat;
  m_repeats = repeats;
  if (m_quiet || repeats <= 1) return;
  if (m_tty) draw_locked();
  else fmt::print(stderr, "abtrack: [{}/{}] {}: invocation {}/{}\n", m_index + 1, m_total, m_label, repeat + 1, repeats);
}

void Progress::cell_measured() {
  std::lock_guard lock(m_mutex);
  m_done_seconds += since(m_cell_start);
  ++m_done;
  m_active = false;
  clear_locked();
}

void Progress::print_result(const std::string& line, runner::Outcome outcome) {
  std::lock_guard lock(m_mutex);
  clear_locked();
  fmt::print("{}\n", coloured_result(line, outcome, colour_enabled(STDOUT_FILENO)));
  std::fflush(stdout);
}

}  // namespace abtrack::cli
