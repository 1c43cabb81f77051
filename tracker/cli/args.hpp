#pragma once
// The command line: the global options every command accepts, a command's arguments, and the
// helpers the commands parse their own options with.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abtrack::cli {

// Options before or after the command name that every command accepts.
struct GlobalOptions {
  std::optional<std::string> plan;  // -p/--plan FILE
  bool quiet = false;               // -q/--quiet
  bool verbose = false;             // -v/--verbose: stream the commands' output to stderr
};

// The arguments of one command after the global options were taken out.
struct Args {
  std::string command;
  std::vector<std::string> rest;
  GlobalOptions global;
};

// Takes "--name VALUE" / "--name=VALUE" at args[i]; advances i. nullopt when args[i] is not it.
// Throws Error(usage) when the value is missing.
std::optional<std::string> take_value(const std::vector<std::string>& args, std::size_t& i, std::string_view name);

// Throws Error(usage) for an argument a command does not know, with did-you-mean over `known`.
[[noreturn]] void unknown_argument(const std::string& command, const std::string& arg,
                                   const std::vector<std::string>& known);

}  // namespace abtrack::cli
