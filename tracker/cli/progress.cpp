#include "cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "util/text.hpp"

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

void warn(const std::string& message) { fmt::print(stderr, "abtrack: warning: {}\n", message); }

void info(const GlobalOptions& g, const std::string& message) {
  if (!g.quiet) fmt::print(stderr, "abtrack: {}\n", message);
}

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
  const char* code = outcome == runner::Outcome::pass   ? "\033[32m"
                     : outcome == runner::Outcome::fail ? "\033[1;31m"
                                                        : "\033[33m";
  return line.substr(0, pos + 2) + code + word + "\033[0m" + line.substr(pos + needle.size());
}

std::string format_duration(double seconds) {
  long s = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

ProgressLine::ProgressLine(const GlobalOptions& g, std::size_t total)
    : m_quiet(g.quiet),
      m_tty(!g.quiet && !g.verbose && ::isatty(STDERR_FILENO) == 1),
      m_total(total),
      m_start(std::chrono::steady_clock::now()),
      m_cell_start(m_start) {
  // The elapsed time moves on while a long cell runs: redraw once a second.
  if (m_tty) m_ticker = std::thread([this] { tick(); });
}

ProgressLine::~ProgressLine() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
    clear_locked();
  }
  m_wake.notify_all();
  if (m_ticker.joinable()) m_ticker.join();
}

void ProgressLine::tick() {
  std::unique_lock lock(m_mutex);
  while (!m_stop) {
    m_wake.wait_for(lock, std::chrono::seconds(1));
    if (!m_stop && m_active) draw_locked();
  }
}

std::string ProgressLine::status_text() const {
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

void ProgressLine::draw_locked() {
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

void ProgressLine::clear_locked() {
  if (!m_tty || m_shown == 0) return;
  std::fputs(("\r" + std::string(m_shown, ' ') + "\r").c_str(), stderr);
  std::fflush(stderr);
  m_shown = 0;
}

void ProgressLine::start_cell(std::size_t index, const std::string& label) {
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

void ProgressLine::invocation(int repeat, int repeats) {
  std::lock_guard lock(m_mutex);
  m_repeat = repeat;
  m_repeats = repeats;
  if (m_quiet || repeats <= 1) return;
  if (m_tty) draw_locked();
  else
    fmt::print(stderr, "abtrack: [{}/{}] {}: invocation {}/{}\n", m_index + 1, m_total, m_label, repeat + 1, repeats);
}

void ProgressLine::cell_measured() {
  std::lock_guard lock(m_mutex);
  m_done_seconds += since(m_cell_start);
  ++m_done;
  m_active = false;
  clear_locked();
}

void ProgressLine::print_result(const std::string& line, runner::Outcome outcome, const std::string& details) {
  std::lock_guard lock(m_mutex);
  clear_locked();
  fmt::print("{}\n{}", coloured_result(line, outcome, colour_enabled(STDOUT_FILENO)), details);
  std::fflush(stdout);
}

std::string stderr_excerpt(const record::Record& rec) {
  constexpr std::size_t kLines = 5, kColumns = 160;
  const auto& run = rec.data;
  if (run.outcome != runner::Outcome::invalid) return {};
  // The command that failed: the last invocation, or the setup when it kept the command from running.
  const runner::Invocation* inv = !run.invocations.empty() ? &run.invocations.back()
                                  : run.setup              ? &*run.setup
                                                           : nullptr;
  if (!inv) return {};
  std::vector<std::string> lines;
  for (auto raw : util::split(inv->stderr_tail, '\n')) {
    // What a terminal shows of a line redrawn with carriage returns (progress bars): its last part.
    std::string_view text(raw);
    while (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (auto cr = text.rfind('\r'); cr != std::string_view::npos) text.remove_prefix(cr + 1);
    std::string clean;
    for (char c : text) clean += (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f ? '?' : c;
    if (util::trim(clean).empty()) continue;
    if (run.reason.find(std::string(util::trim(clean))) != std::string::npos) continue;  // quoted by the reason already
    lines.push_back(fit(clean, kColumns));
  }
  if (lines.empty()) return {};
  std::string out = lines.size() > kLines ? fmt::format("  stderr (last {} lines):\n", kLines) : "  stderr:\n";
  for (std::size_t i = lines.size() > kLines ? lines.size() - kLines : 0; i < lines.size(); ++i)
    out += "    " + lines[i] + "\n";
  return out;
}

util::OutputFn output_echo(std::string prefix) {
  static std::mutex mutex;  // whole writes: cells running side by side do not tear each other's lines
  auto write = [](std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::write(STDERR_FILENO, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // stderr is gone: the output is still captured
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  };
  if (prefix.empty())
    return [write](int, std::string_view bytes) {
      std::lock_guard lock(mutex);
      write(bytes);
    };
  auto pending = std::make_shared<std::array<std::string, 3>>();  // a partial line per stream
  return [write, prefix = std::move(prefix), pending](int stream, std::string_view bytes) {
    std::lock_guard lock(mutex);
    std::string& part = (*pending)[stream == 1 ? 1 : 2];
    part.append(bytes);
    std::string out;
    std::size_t start = 0;
    for (std::size_t nl; (nl = part.find('\n', start)) != std::string::npos; start = nl + 1)
      out += prefix + part.substr(start, nl + 1 - start);
    part.erase(0, start);
    if (bytes.empty() && !part.empty()) {  // the stream ended inside a line
      out += prefix + part + "\n";
      part.clear();
    }
    write(out);
  };
}

void TerminalProgress::info(const std::string& message) { cli::info(m_global, message); }

void TerminalProgress::warn(const std::string& message) { cli::warn(message); }

void TerminalProgress::print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

void TerminalProgress::result(const std::string& line, const record::Record& rec) {
  if (m_line) return m_line->print_result(line, rec.data.outcome, stderr_excerpt(rec));
  print(fmt::format("{}\n{}", line, stderr_excerpt(rec)));
}

util::OutputFn TerminalProgress::command_output(const std::string& prefix) {
  return m_global.verbose ? output_echo(prefix) : util::OutputFn{};
}

void TerminalProgress::cells_started(std::size_t total) {
  m_line.reset();  // the line of cells before, if any, is cleared first
  m_line = std::make_unique<ProgressLine>(m_global, total);
}

void TerminalProgress::cell_started(std::size_t index, const std::string& label) {
  if (m_line) m_line->start_cell(index, label);
}

void TerminalProgress::invocation_started(int repeat, int repeats) {
  if (m_line) m_line->invocation(repeat, repeats);
}

void TerminalProgress::cell_measured() {
  if (m_line) m_line->cell_measured();
}

void TerminalProgress::cells_done() { m_line.reset(); }

}  // namespace abtrack::cli
