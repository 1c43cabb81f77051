#include "cli/cli.hpp"

#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"
#include "util/version.hpp"

namespace abtrack::cli {
namespace {

void print_error(const Error& e) {
  for (const auto& d : e.diagnostics()) fmt::print(stderr, "abtrack: error: {}\n", format_diagnostic(d));
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& c : commands()) names.emplace_back(c.name);
  return names;
}

Args parse_args(int argc, char** argv) {
  Args args;
  std::vector<std::string> all(argv + 1, argv + argc);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& a = all[i];
    if (auto v = take_value(all, i, "--plan")) args.global.plan = v;
    else if (auto v2 = take_value(all, i, "-p")) args.global.plan = v2;
    else if (a == "-q" || a == "--quiet") args.global.quiet = true;
    else if (a == "-v" || a == "--verbose") args.global.verbose = true;
    else if (args.command.empty() && (a == "-h" || a == "--help")) args.command = "help";
    else if (args.command.empty() && a == "--version") args.command = "--version";
    else if (args.command.empty() && !a.empty() && a[0] == '-')
      throw Error(Exit::usage, fmt::format("unknown option '{}'", a), "see abtrack help");
    else if (args.command.empty()) args.command = a;
    else if (a == "-h" || a == "--help") {
      args.rest = {args.command};
      args.command = "help";
    } else args.rest.push_back(a);
  }
  return args;
}

}  // namespace

int abtrack_main(int argc, char** argv) {
  util::trace("start");
  try {
    Args args = parse_args(argc, argv);
    if (args.command == "--version") {
      if (!args.rest.empty())
        throw Error(Exit::usage, fmt::format("--version takes no argument, not '{}'", args.rest.front()));
      fmt::print("abtrack {}\n", version());
      return 0;
    }
    if (args.command.empty())
      throw Error(Exit::usage, "no command given", "abtrack help lists the commands; abtrack step runs the next cell");
    for (const auto& c : commands()) {
      if (c.name != args.command) continue;
      int rc = c.run(args);
      util::trace("done");
      return rc;
    }
    throw Error(
        Exit::usage,
        fmt::format("unknown command '{}'{}", args.command, util::suggestion_suffix(args.command, command_names())),
        "abtrack help lists the commands");
  } catch (const Error& e) {
    print_error(e);
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    fmt::print(stderr, "abtrack: error: internal error: {}\n  hint: please report this with the command you ran\n",
               e.what());
    return static_cast<int>(Exit::environment);
  }
}

}  // namespace abtrack::cli
