#include "cli/args.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace abtrack::cli {

std::optional<std::string> take_value(const std::vector<std::string>& args, std::size_t& i, std::string_view name) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size())
      throw Error(Exit::usage, fmt::format("{} needs a value", name),
                  fmt::format("write {} VALUE; abtrack help lists the options", name));
    i += 1;
    return args[i];
  }
  if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=')
    return a.substr(name.size() + 1);
  return std::nullopt;
}

void unknown_argument(const std::string& command, const std::string& arg, const std::vector<std::string>& known) {
  std::string word = arg.substr(0, arg.find('='));
  throw Error(Exit::usage,
              fmt::format("{}: unknown argument '{}'{}", command, arg, util::suggestion_suffix(word, known)),
              fmt::format("see abtrack help {}", command));
}

}  // namespace abtrack::cli
