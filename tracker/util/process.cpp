#include "util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/files.hpp"

extern char** environ;

namespace abtrack::util {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_signal{0};
int g_wake_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  if (g_wake_pipe[1] >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(g_wake_pipe[1], &c, 1);
  }
}

// Keeps the last `limit` bytes of a stream while counting all of it.
struct Capture {
  std::string data;
  std::uint64_t total = 0;
  std::size_t limit = 0;
  void add(const char* p, std::size_t n) {
    total += n;
    if (n >= limit) {
      data.assign(p + (n - limit), limit);
      return;
    }
    data.append(p, n);
    // Trim in bulk so the cost stays linear in the bytes read.
    if (data.size() > 2 * limit) data.erase(0, data.size() - limit);
  }
  void finish() {
    if (data.size() > limit) data.erase(0, data.size() - limit);
  }
};

// Reads what is available, handing it to `echo` (stream 1 or 2) too; returns false at EOF or on error.
bool drain(int fd, Capture& cap, int stream, const OutputFn& echo) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      cap.add(buf, static_cast<std::size_t>(n));
      if (echo) echo(stream, std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (echo) echo(stream, {});
    return false;
  }
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<std::string> build_environment(const ProcessSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    bool overridden = false;
    for (const auto& [k, v] : spec.env) overridden |= (k == key);
    if (!overridden) env.emplace_back(kv);
  }
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

void install_interrupt_handlers() {
  if (g_wake_pipe[0] >= 0) return;
  if (::pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() { return g_signal.load(); }

void throw_if_interrupted() {
  if (int sig = interrupt_signal()) throw Interrupted(fmt::format("interrupted by {}", signal_name(sig)));
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

namespace {

// Starts `/bin/sh -c COMMAND` in its own process group, stdin /dev/null, stdout and stderr on the
// given pipe ends, the signals abtrack handles back at their defaults.
Expected<pid_t> spawn_shell(const ProcessSpec& spec, int out_w, int err_w) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w, 2);
  if (!spec.workdir.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.workdir.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = build_environment(spec);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string cmd = spec.shell_command;
  char sh[] = "/bin/sh", dash_c[] = "-c";
  char* argv[] = {sh, dash_c, cmd.data(), nullptr};

  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::string where = spec.workdir.empty() ? "" : fmt::format(" in {}", spec.workdir.string());
    return Failure(fmt::format("cannot start /bin/sh{}: {}", where, std::strerror(rc)));
  }
  return pid;
}

// The started shell and how far its stopping has gone: TERM sent (waiting its grace), KILL sent.
struct Child {
  pid_t pid = -1;
  Clock::time_point t0;
  int status = 0;
  bool exited = false;
  std::optional<Clock::time_point> term_at, kill_at, exit_at;

  void kill_group(int sig) const { ::kill(-pid, sig); }
  void reap() {
    if (exited) return;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exit_at = Clock::now();
    }
  }
  // One look at the clock and the signals: interrupted or past the timeout, TERM the group; past
  // the grace, KILL it. After the shell exited, what still holds the pipes is a leftover of its
  // group: KILLed after 200 ms. False when waiting is over (a leftover escaped the group).
  bool escalate(const ProcessSpec& spec, ProcessResult& result, bool pipes_open) {
    auto now = Clock::now();
    if (exited) {
      if (!pipes_open) return false;
      if (!kill_at && now - *exit_at > std::chrono::milliseconds(200)) {
        kill_group(SIGKILL);
        kill_at = now;
      }
      return !(kill_at && now - *kill_at > std::chrono::seconds(1));
    }
    bool stop = false;
    if (interrupt_signal() && !result.interrupted) {
      result.interrupted = stop = true;
    } else if (spec.timeout_s > 0 && seconds_since(t0) > spec.timeout_s && !result.timed_out && !result.interrupted) {
      result.timed_out = stop = true;
    }
    if (stop && !term_at) {
      kill_group(SIGTERM);
      term_at = now;
    }
    if (term_at && !kill_at && now - *term_at > std::chrono::duration<double>(spec.kill_grace_s)) {
      kill_group(SIGKILL);
      kill_at = now;
    }
    return true;
  }
};

// Reads both pipes until they close while the child runs, stopping it as `escalate` says.
void supervise(const ProcessSpec& spec, Child& child, int out_r, int err_r, Capture& out, Capture& err,
               ProcessResult& result) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child.pid, 0)));
  bool out_open = true, err_open = true;
  for (;;) {
    child.reap();
    if (!child.escalate(spec, result, out_open || err_open)) break;
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({out_r, POLLIN, 0});
    if (err_open) fds.push_back({err_r, POLLIN, 0});
    if (!child.exited && pidfd.get() >= 0) fds.push_back({pidfd.get(), POLLIN, 0});
    if (g_wake_pipe[0] >= 0) fds.push_back({g_wake_pipe[0], POLLIN, 0});
    int wait_ms = 100;
    if (!child.exited && spec.timeout_s > 0 && !child.term_at) {
      double left = spec.timeout_s - seconds_since(child.t0);
      wait_ms = std::max(0, std::min(wait_ms, static_cast<int>(left * 1000) + 1));
    }
    int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (const auto& p : fds) {
      if (!p.revents) continue;
      if (p.fd == out_r) out_open = drain(p.fd, out, 1, spec.echo);
      else if (p.fd == err_r) err_open = drain(p.fd, err, 2, spec.echo);
      else if (p.fd == g_wake_pipe[0]) {
        char buf[64];
        while (::read(p.fd, buf, sizeof buf) > 0) {}
      }
    }
  }
}

}  // namespace

Expected<ProcessResult> try_run_process(const ProcessSpec& spec) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Failure(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Failure(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  Child child;
  child.t0 = Clock::now();
  auto pid = spawn_shell(spec, out_w.get(), err_w.get());
  if (!pid) return pid.failure();
  child.pid = pid.value();
  out_w.reset();
  err_w.reset();
  if (spec.on_start) spec.on_start(child.pid);
  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);

  ProcessResult result;
  Capture out, err;
  out.limit = err.limit = spec.capture_limit;
  supervise(spec, child, out_r.get(), err_r.get(), out, err, result);
  if (!child.exited) {
    child.kill_group(SIGKILL);
    ::waitpid(child.pid, &child.status, 0);
  } else {
    // Leftovers of the group, if any, must not outlive the run.
    child.kill_group(SIGKILL);
  }
  result.duration_s =
      child.exit_at ? std::chrono::duration<double>(*child.exit_at - child.t0).count() : seconds_since(child.t0);
  if (WIFEXITED(child.status)) result.exit_code = WEXITSTATUS(child.status);
  if (WIFSIGNALED(child.status)) result.signal = WTERMSIG(child.status);
  out.finish();
  err.finish();
  result.out = std::move(out.data);
  result.err = std::move(err.data);
  result.out_bytes = out.total;
  result.err_bytes = err.total;
  return result;
}

ProcessResult run_process(const ProcessSpec& spec) { return try_run_process(spec).value_or_throw(); }

}  // namespace abtrack::util
