// `abtrack log`: the runs, newest first, read from git history (not from runs/).
#include <ctime>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "plan/load.hpp"

namespace abtrack::cli {
namespace {

// The Abtrack-Code trailer with its object ids shortened to 12 digits, as tables show code:
// "1a2b3c4d5e6f", "1a2b3c4d5e6f +snapshot 9f8e7d6c5b4a", "1a2b3c4d5e6f +dirty"; "?" for runs
// whose commit has none.
std::string short_code(const std::string& trailer) {
  if (trailer.empty()) return "?";
  std::string out;
  std::size_t at = 0;
  while (at < trailer.size()) {
    std::size_t end = trailer.find(' ', at);
    if (end == std::string::npos) end = trailer.size();
    std::string word = trailer.substr(at, end - at);
    const bool id = word.size() >= 40 && word.find_first_not_of("0123456789abcdef") == std::string::npos;
    out += (out.empty() ? "" : " ") + (id ? word.substr(0, 12) : word);
    at = end + 1;
  }
  return out;
}

}  // namespace

int cmd_log(const Args& args) {
  bool json = false, all = false;
  for (const auto& a : args.rest) {
    if (a == "--json") json = true;
    else if (a == "--all") all = true;
    else unknown_argument("log", a, {"--json", "--all"});
  }
  auto repo = gitstore::Repository::discover(std::filesystem::current_path());
  std::string only;  // the plan's experiment; empty: every experiment
  TerminalProgress progress(args.global);
  if (!all) only = experiment::open_context(args.global.plan, progress).plan.experiment;
  // Runs and drops (`abtrack drop`: Abtrack-Dropped) both name their experiment.
  auto entries = repo.history("Abtrack-Experiment");
  std::set<std::pair<std::string, std::string>> dropped;  // (experiment, run)
  for (const auto& e : entries)
    if (!e.trailer("Abtrack-Dropped").empty())
      dropped.emplace(e.trailer("Abtrack-Experiment"), e.trailer("Abtrack-Dropped"));
  auto out = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    if (!only.empty() && e.trailer("Abtrack-Experiment") != only) continue;
    const std::string drop = e.trailer("Abtrack-Dropped");
    if (drop.empty() && e.trailer("Abtrack-Run").empty()) continue;
    char date[32];
    std::time_t t = static_cast<std::time_t>(e.time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!drop.empty()) {
      // The drop commit: the run it took back, and why (its message's body).
      if (json)
        out.push_back({{"commit", e.commit},
                       {"experiment", e.trailer("Abtrack-Experiment")},
                       {"run", std::atoi(drop.c_str())},
                       {"outcome", "dropped"},
                       {"date", date}});
      else
        fmt::print("{} {:>5}  {}  {:<8} (drop of run {}){}\n", e.commit.substr(0, 12), drop, date, "dropped", drop,
                   only.empty() ? "  (" + e.trailer("Abtrack-Experiment") + ")" : "");
      continue;
    }
    const bool was_dropped = dropped.count({e.trailer("Abtrack-Experiment"), e.trailer("Abtrack-Run")}) > 0;
    if (json) {
      out.push_back({{"commit", e.commit},
                     {"experiment", e.trailer("Abtrack-Experiment")},
                     {"run", std::atoi(e.trailer("Abtrack-Run").c_str())},
                     {"cell", e.trailer("Abtrack-Cell")},
                     {"outcome", e.trailer("Abtrack-Outcome")},
                     {"code", e.trailer("Abtrack-Code")},
                     {"date", date},
                     {"dropped", was_dropped}});
    } else {
      // The code the run measured (for a revision's run, what its revision resolved to).
      fmt::print("{} {:>5}  {}  {:<8} {}  code {}{}{}\n", e.commit.substr(0, 12), e.trailer("Abtrack-Run"), date,
                 e.trailer("Abtrack-Outcome"), e.trailer("Abtrack-Cell"), short_code(e.trailer("Abtrack-Code")),
                 was_dropped ? " [dropped]" : "", only.empty() ? "  (" + e.trailer("Abtrack-Experiment") + ")" : "");
    }
  }
  if (json) fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace abtrack::cli
