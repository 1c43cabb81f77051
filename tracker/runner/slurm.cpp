#include "runner/slurm.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

extern char** environ;

namespace abtrack::runner::slurm {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// What a task keeps of stdout per invocation: enough for metrics, bounded for the shared disk.
constexpr std::size_t kStdoutBytes = 4u << 20;
constexpr std::size_t kTailBytes = 4096;

struct CliResult {
  int status = -1;  // exit status, or -1 when killed
  std::string out, err;
};

// Runs a Slurm client directly (no shell, so no quoting) and waits for it. Not through
// util::run_process on purpose: after Ctrl-C that one stops whatever it runs, and scancel
// must still run then.
CliResult call(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw Error(Exit::environment, fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw Error(Exit::environment, fmt::format("pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw Error(Exit::environment, fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)),
                "is the Slurm client installed (slurm-client) and on PATH?");
  }
  CliResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      char buf[4096];
      auto n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A file that may not be there yet (a task's result, the job id): missing or unreadable is empty.
std::string read_or_empty(const fs::path& p) { return util::try_read_file(p).value_or({}); }

json pairs_json(const std::vector<std::pair<std::string, std::string>>& v) {
  json a = json::array();
  for (const auto& [k, x] : v) a.push_back(json::array({k, x}));
  return a;
}

std::vector<std::pair<std::string, std::string>> pairs_of(const json& a) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& e : a) v.emplace_back(e.at(0).get<std::string>(), e.at(1).get<std::string>());
  return v;
}

Submission submission_of(const fs::path& dir, const json& j) {
  Submission s;
  s.dir = dir;
  s.experiment = j.at("experiment").get<std::string>();
  s.created = j.value("created", "");
  const json meta = j.value("meta", json::object());
  for (const auto& [k, v] : meta.items()) s.meta[k] = v.get<std::string>();
  for (const auto& t : j.at("tasks")) {
    Task task;
    task.index = t.at("index").get<int>();
    task.id = t.at("id").get<std::string>();
    task.cell = pairs_of(t.at("cell"));
    task.command = t.at("command").get<std::string>();
    task.env = pairs_of(t.at("env"));
    task.workdir = t.value("workdir", "");
    task.timeout_s = t.value("timeout_s", 600.0);
    task.repeats = t.value("repeats", 1);
    s.tasks.push_back(std::move(task));
  }
  s.job_id = std::string(util::trim(read_or_empty(dir / "job_id")));
  return s;
}

// The submission in `dir`, or why its manifest cannot be read (a folder may be half-made).
Expected<Submission> read_submission(const fs::path& dir) {
  auto text = util::try_read_file(dir / "manifest.json");
  if (!text) return text.failure();
  // nlohmann reports malformed JSON and a missing or mistyped field only by throwing.
  try {
    return submission_of(dir, json::parse(text.value()));
  } catch (const json::exception& e) {
    return Failure(e.what());
  }
}

fs::path result_path(const Submission& s, int index) { return s.dir / fmt::format("result-{}.json", index); }

// Replays the invocations a task recorded, so run_cell reads metrics and gates exactly as it
// does for a local run.
class Replay final : public Executor {
 public:
  explicit Replay(std::vector<util::ProcessResult> results) : m_results(std::move(results)) {}
  util::ProcessResult execute(const util::ProcessSpec&) override {
    if (m_next < m_results.size()) return m_results[m_next++];
    util::ProcessResult missing;  // the task stopped early; run_cell stops at its failure first
    missing.signal = 9;
    return missing;
  }

 private:
  std::vector<util::ProcessResult> m_results;
  std::size_t m_next = 0;
};

Run invalid_run(const plan::Plan& plan, const plan::Cell& cell, const Task& t, std::string reason) {
  Run run;
  run.id = t.id;
  run.cell = cell;
  run.command = t.command;
  run.started = run.finished = utc_now();
  run.outcome = Outcome::invalid;
  run.reason = std::move(reason);
  run.gates = gates::evaluate(plan.gates, run.samples);
  return run;
}

plan::Cell cell_of(const plan::Plan& plan, const Task& t) {
  plan::Cell c;
  bool ok = t.cell.size() == plan.axes.size();
  for (std::size_t i = 0; ok && i < t.cell.size(); ++i) {
    const auto& axis = plan.axes[i];
    ok = axis.name == t.cell[i].first &&
         std::find(axis.values.begin(), axis.values.end(), t.cell[i].second) != axis.values.end();
    c.values.push_back(t.cell[i].second);
  }
  if (!ok) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : t.cell) kv.push_back(k + "=" + v);
    throw Error(Exit::usage,
                fmt::format("task {} measured cell {}, which the plan no longer has", t.index, fmt::join(kv, " ")));
  }
  return c;
}

std::string job_name(const std::string& job_id, int index) { return fmt::format("{}_{}", job_id, index); }

}  // namespace

fs::path base_dir(const plan::Plan& plan, const fs::path& state_dir) {
  if (plan.slurm.dir.empty()) return state_dir / "slurm";
  fs::path p(plan.slurm.dir);
  return p.is_absolute() ? p : plan.repo_root / p;
}

Submission submit(const plan::Plan& plan, const std::vector<plan::Cell>& cells, const fs::path& base,
                  const fs::path& abtrack_exe, const std::map<std::string, std::string>& meta) {
  if (cells.empty()) throw Error(Exit::usage, "nothing to submit");
  Submission s;
  s.experiment = plan.experiment;
  s.created = utc_now();
  s.meta = meta;
  std::string stamp = s.created;
  stamp.erase(std::remove_if(stamp.begin(), stamp.end(), [](char c) { return c == ':' || c == '-'; }), stamp.end());
  s.dir = base / fmt::format("{}-{}", stamp, new_measurement_id().substr(0, 8));
  json tasks = json::array();
  for (std::size_t i = 0; i < cells.size(); ++i) {
    Task t;
    t.index = static_cast<int>(i);
    t.id = new_measurement_id();
    for (std::size_t a = 0; a < plan.axes.size(); ++a) t.cell.emplace_back(plan.axes[a].name, cells[i].values[a]);
    t.command = plan::substitute(plan, cells[i], plan.command, true);
    for (const auto& [k, v] : plan.env) t.env.emplace_back(k, plan::substitute(plan, cells[i], v, false));
    t.workdir = plan.command_dir().string();
    t.timeout_s = plan.timeout_s;
    t.repeats = plan.repeats;
    tasks.push_back(json{{"index", t.index},
                         {"id", t.id},
                         {"cell", pairs_json(t.cell)},
                         {"command", t.command},
                         {"env", pairs_json(t.env)},
                         {"workdir", t.workdir},
                         {"timeout_s", t.timeout_s},
                         {"repeats", t.repeats}});
    s.tasks.push_back(std::move(t));
  }
  json m{{"experiment", s.experiment},
         {"created", s.created},
         {"plan_sha256", plan.sha256},
         {"meta", s.meta},
         {"tasks", tasks}};
  util::write_file_atomic(s.dir / "manifest.json", m.dump(2) + "\n");
  util::write_file_atomic(
      s.dir / "job.sh",
      fmt::format("#!/bin/sh\n# abtrack job array of experiment {}: task N runs cell N of manifest.json.\n"
                  "exec {} __task {} \"$SLURM_ARRAY_TASK_ID\"\n",
                  s.experiment, util::shell_quote(abtrack_exe.string()), util::shell_quote(s.dir.string())));
  std::vector<std::string> argv = {
      "sbatch",
      "--parsable",
      fmt::format("--array=0-{}{}", cells.size() - 1,
                  plan.slurm.max_parallel > 0 ? fmt::format("%{}", plan.slurm.max_parallel) : ""),
      "--job-name=abtrack-" + plan.experiment,
      "--output=" + (s.dir / "slurm-%a.out").string(),
      "--chdir=" + plan.command_dir().string()};
  if (!plan.slurm.partition.empty()) argv.push_back("--partition=" + plan.slurm.partition);
  if (!plan.slurm.gres.empty()) argv.push_back("--gres=" + plan.slurm.gres);
  if (!plan.slurm.time.empty()) argv.push_back("--time=" + plan.slurm.time);
  if (!plan.slurm.account.empty()) argv.push_back("--account=" + plan.slurm.account);
  for (const auto& e : plan.slurm.extra) argv.push_back(e);
  argv.push_back((s.dir / "job.sh").string());
  CliResult r;
  try {
    r = call(argv);
  } catch (const Error&) {
    std::error_code ec;
    fs::remove_all(s.dir, ec);
    throw;
  }
  // `--parsable` prints "jobid" or "jobid;cluster".
  std::string id(util::trim(r.out.substr(0, r.out.find(';'))));
  if (r.status != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    std::error_code ec;
    fs::remove_all(s.dir, ec);
    throw Error(Exit::environment,
                fmt::format("sbatch refused the job array (exit {}): {}", r.status,
                            util::trim(util::utf8_tail(r.err + r.out, 600))),
                fmt::format("the command was: {}", fmt::join(argv, " ")));
  }
  s.job_id = id;
  util::write_file_atomic(s.dir / "job_id", id + "\n");
  return s;
}

std::vector<Submission> outstanding(const fs::path& base, const std::string& experiment) {
  std::vector<Submission> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    if (!e.is_directory(ec) || fs::exists(e.path() / "done", ec) || !fs::exists(e.path() / "job_id", ec)) continue;
    auto s = read_submission(e.path());
    if (!s) continue;  // a half-made folder of a submission that never reached sbatch
    if (s.value().experiment == experiment && !s.value().job_id.empty()) out.push_back(std::move(s).value());
  }
  std::sort(out.begin(), out.end(), [](const Submission& a, const Submission& b) { return a.dir < b.dir; });
  return out;
}

std::map<int, std::string> task_states(const std::string& job_id) {
  auto r = call({"squeue", "-h", "-r", "-t", "all", "-j", job_id, "-o", "%K|%T"});
  std::map<int, std::string> states;
  if (r.status != 0) {
    if (r.err.find("Invalid job id") != std::string::npos) return states;  // purged after MinJobAge
    throw Error(Exit::environment,
                fmt::format("squeue failed (exit {}): {}", r.status, util::trim(util::utf8_tail(r.err, 400))));
  }
  for (const auto& line : util::split(r.out, '\n')) {
    auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    auto index = util::parse_double(util::trim(std::string_view(line).substr(0, bar)));
    if (!index) continue;  // a not yet expanded range of pending tasks: still pending
    states[static_cast<int>(*index)] = std::string(util::trim(std::string_view(line).substr(bar + 1)));
  }
  if (states.empty() && !util::trim(r.out).empty()) states[-1] = "PENDING";  // known, nothing expanded yet
  return states;
}

bool terminal(const std::string& state) {
  static const char* done[] = {"COMPLETED", "CANCELLED", "FAILED",    "TIMEOUT", "NODE_FAIL",   "OUT_OF_MEMORY",
                               "BOOT_FAIL", "DEADLINE",  "PREEMPTED", "REVOKED", "SPECIAL_EXIT"};
  return std::any_of(std::begin(done), std::end(done), [&](const char* d) { return state.rfind(d, 0) == 0; });
}

std::optional<Run> finished_run(const plan::Plan& plan, const Submission& s, const Task& t,
                                const std::map<int, std::string>& states, std::string* environment_json) {
  auto state_it = states.find(t.index);
  std::string state = state_it != states.end() ? state_it->second : "";
  std::string text = read_or_empty(result_path(s, t.index));
  std::string where = job_name(s.job_id, t.index);
  plan::Cell cell = cell_of(plan, t);
  if (text.empty()) {
    if (states.empty())
      return invalid_run(plan, cell, t,
                         fmt::format("slurm task {} ended without a result file and squeue no longer knows it (see {})",
                                     where, (s.dir / fmt::format("slurm-{}.out", t.index)).string()));
    if (state.empty() || !terminal(state)) return std::nullopt;
    std::string why = state.rfind("CANCELLED", 0) == 0 ? "was cancelled"
                      : state == "TIMEOUT"             ? "reached its Slurm time limit"
                                                       : "ended";
    return invalid_run(plan, cell, t,
                       fmt::format("slurm task {} {} ({}) before it wrote a result (see {})", where, why, state,
                                   (s.dir / fmt::format("slurm-{}.out", t.index)).string()));
  }
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return invalid_run(plan, cell, t, fmt::format("slurm task {} wrote an unreadable result file", where));
  std::string stopped_by = j.value("stopped_by", "");
  const json invocations = j.value("invocations", json::array());
  // scancel signals every process of the task: the command can die of its SIGTERM before the
  // task runner notes its own, which leaves a result without stopped_by. A last invocation killed
  // by SIGTERM (not by abtrack's own timeout) is read like one: the Slurm state says whether the
  // task was cancelled.
  if (stopped_by.empty() && !invocations.empty() && !states.empty()) {
    const json& last = invocations.back();
    if (last.contains("signal") && last["signal"].is_number_integer() && last["signal"].get<int>() == SIGTERM &&
        !last.value("timed_out", false)) {
      if (state.empty() || !terminal(state)) return std::nullopt;
      if (state.rfind("CANCELLED", 0) == 0) stopped_by = util::signal_name(SIGTERM);
    }
  }
  // A task stopped by SIGTERM wrote its result on the way out; its Slurm state says why.
  if (!stopped_by.empty() && !states.empty() && (state.empty() || !terminal(state))) return std::nullopt;
  // scancel signals the task's processes one by one, so a command can even finish normally
  // because a child of it was killed (`sleep 60; echo ...` prints its line) before the runner
  // notes its own signal: its result then looks like any other. After a cancel, a result is read
  // only once Slurm has settled the task, and a task Slurm settled as cancelled is a cancelled
  // run whatever its command printed (a task that had finished before keeps COMPLETED).
  bool finished_as_cancelled = false;
  if (stopped_by.empty() && !states.empty()) {
    if (state.rfind("CANCELLED", 0) == 0) finished_as_cancelled = true;
    else if (cancel_requested(s) && (state.empty() || !terminal(state))) return std::nullopt;
  }
  std::vector<util::ProcessResult> results;
  for (const auto& inv : invocations) {
    util::ProcessResult r;
    if (inv.contains("exit_code") && inv["exit_code"].is_number_integer()) r.exit_code = inv["exit_code"].get<int>();
    if (inv.contains("signal") && inv["signal"].is_number_integer()) r.signal = inv["signal"].get<int>();
    r.timed_out = inv.value("timed_out", false);
    r.duration_s = inv.value("duration_s", 0.0);
    r.out = inv.value("stdout", "");
    r.err = inv.value("stderr_tail", "");
    r.out_bytes = inv.value("stdout_bytes", std::uint64_t{0});
    r.err_bytes = inv.value("stderr_bytes", std::uint64_t{0});
    results.push_back(std::move(r));
  }
  plan::Plan replay_plan = plan;
  replay_plan.repeats =
      std::max<int>(1, std::min<int>(t.repeats, static_cast<int>(std::max<std::size_t>(results.size(), 1))));
  Replay replay(std::move(results));
  Run run = run_cell(replay_plan, cell, replay, nullptr);
  run.id = t.id;
  run.command = t.command;
  run.started = j.value("started", run.started);
  run.finished = j.value("finished", run.finished);
  if (!stopped_by.empty()) {
    std::string why = state.rfind("CANCELLED", 0) == 0 ? "was cancelled"
                      : state == "TIMEOUT"             ? "reached its Slurm time limit"
                                                       : "was stopped";
    run.outcome = Outcome::invalid;
    run.reason = fmt::format("slurm task {} {} ({}{})", where, why, state.empty() ? "" : state + ", ",
                             "the command got " + stopped_by);
  } else if (finished_as_cancelled) {
    // The cancel comes first: a command that fails as it is cancelled (no output yet, status 143
    // from a killed child) most likely failed because of it; its own reason follows.
    std::string own = run.outcome == Outcome::invalid ? run.reason : "";
    run.outcome = Outcome::invalid;
    run.reason = fmt::format("slurm task {} was cancelled ({}) as its command finished{}", where, state,
                             own.empty() ? "" : " (" + own + ")");
  } else if (run.invocations.size() < static_cast<std::size_t>(t.repeats) && run.reason.empty()) {
    run.outcome = Outcome::invalid;
    run.reason = fmt::format("slurm task {} recorded {} of {} invocations", where, run.invocations.size(), t.repeats);
  }
  Placement p;
  p.executor = "slurm";
  p.gpu = j.value("gpu", "");
  p.job_id = s.job_id;
  p.array_index = t.index;
  p.node = j.value("node", "");
  run.placement = p;
  if (environment_json) *environment_json = j.value("environment", "");
  return run;
}

bool is_committed(const Submission& s, int index) {
  std::error_code ec;
  return fs::exists(s.dir / fmt::format("committed-{}", index), ec);
}

void mark_committed(const Submission& s, int index) {
  util::write_file_atomic(s.dir / fmt::format("committed-{}", index), "", util::Durability::ordinary);
}

void mark_done(const Submission& s) { util::write_file_atomic(s.dir / "done", s.job_id + "\n"); }

bool cancel_requested(const Submission& s) {
  std::error_code ec;
  return fs::exists(s.dir / "cancel-requested", ec);
}

void cancel(const Submission& s) {
  // Before scancel: a collect that sees a task's result from now on waits for its Slurm state.
  util::write_file_atomic(s.dir / "cancel-requested", s.job_id + "\n");
  auto r = call({"scancel", s.job_id});
  if (r.status != 0)
    throw Error(Exit::environment, fmt::format("scancel {} failed (exit {}): {}", s.job_id, r.status,
                                               util::trim(util::utf8_tail(r.err, 400))));
}

int run_task(const fs::path& dir, int index, const std::string& environment_json) {
  auto read = read_submission(dir);
  if (!read)
    throw Error(Exit::environment, fmt::format("cannot read {}: {}", (dir / "manifest.json").string(), read.error()));
  const Submission s = std::move(read).value();
  auto t = std::find_if(s.tasks.begin(), s.tasks.end(), [&](const Task& x) { return x.index == index; });
  if (t == s.tasks.end())
    throw Error(Exit::environment, fmt::format("{} has no task {}", (dir / "manifest.json").string(), index));
  util::install_interrupt_handlers();
  json invocations = json::array();
  std::string started = utc_now();
  for (int i = 0; i < t->repeats && !util::interrupt_signal(); ++i) {
    util::ProcessSpec spec;
    spec.shell_command = t->command;
    spec.workdir = t->workdir;
    spec.env = t->env;
    spec.timeout_s = t->timeout_s;
    spec.capture_limit = kStdoutBytes;
    auto ran = util::try_run_process(spec);
    util::ProcessResult r;
    if (ran) {
      r = std::move(ran).value();
    } else {  // /bin/sh could not start: the invocation fails with the shell's 127 and says why
      r.exit_code = 127;
      r.err = ran.error();
    }
    json inv{{"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
             {"signal", r.signal ? json(*r.signal) : json(nullptr)},
             {"timed_out", r.timed_out},
             {"duration_s", r.duration_s},
             {"stdout", r.out},
             {"stdout_bytes", r.out_bytes},
             {"stderr_tail", util::utf8_tail(r.err, kTailBytes)},
             {"stderr_bytes", r.err_bytes}};
    invocations.push_back(std::move(inv));
    if (!r.succeeded()) break;
  }
  const char* node = std::getenv("SLURMD_NODENAME");
  char host[256] = {};
  if (!node) {
    ::gethostname(host, sizeof host - 1);
    node = host;
  }
  const char* gpu = std::getenv("CUDA_VISIBLE_DEVICES");
  const char* job = std::getenv("SLURM_ARRAY_JOB_ID");
  int sig = util::interrupt_signal();
  json result{{"index", index},
              {"id", t->id},
              {"job_id", job ? job : s.job_id},
              {"node", node},
              {"gpu", gpu ? gpu : ""},
              {"started", started},
              {"finished", utc_now()},
              {"stopped_by", sig ? util::signal_name(sig) : ""},
              {"invocations", invocations},
              {"environment", environment_json}};
  util::write_file_atomic(result_path(s, index), result.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  return 0;
}

}  // namespace abtrack::runner::slurm
