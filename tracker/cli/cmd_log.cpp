// `abtrack log`: the runs, newest first, read from git history (not from runs/).
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "plan/load.hpp"

namespace abtrack::cli {

int cmd_log(const Args& args) {
  bool json = false, all = false;
  for (const auto& a : args.rest) {
    if (a == "--json") json = true;
    else if (a == "--all") all = true;
    else unknown_argument("log", a, {"--json", "--all"});
  }
  auto repo = gitstore::Repository::discover(std::filesystem::current_path());
  std::string experiment;
  if (!all) experiment = open_context(args.global).plan.experiment;
  auto entries = repo.history("Abtrack-Run");
  auto out = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    if (!experiment.empty() && e.trailer("Abtrack-Experiment") != experiment) continue;
    char date[32];
    std::time_t t = static_cast<std::time_t>(e.time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (json) {
      out.push_back({{"commit", e.commit},
                     {"experiment", e.trailer("Abtrack-Experiment")},
                     {"run", std::atoi(e.trailer("Abtrack-Run").c_str())},
                     {"cell", e.trailer("Abtrack-Cell")},
                     {"outcome", e.trailer("Abtrack-Outcome")},
                     {"code", e.trailer("Abtrack-Code")},
                     {"date", date}});
    } else {
      fmt::print("{} {:>5}  {}  {:<8} {}{}\n", e.commit.substr(0, 12), e.trailer("Abtrack-Run"), date,
                 e.trailer("Abtrack-Outcome"), e.trailer("Abtrack-Cell"),
                 experiment.empty() ? "  (" + e.trailer("Abtrack-Experiment") + ")" : "");
    }
  }
  if (json) fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace abtrack::cli
