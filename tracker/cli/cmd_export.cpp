// `abtrack export`: the committed runs (or cells) as CSV, markdown or JSON on stdout.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "doc/export.hpp"

namespace abtrack::cli {

int cmd_export(const Args& args) {
  std::optional<doc::ExportFormat> format;
  bool cells = false;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto v = take_value(args.rest, i, "--format")) {
      if (*v == "csv") format = doc::ExportFormat::csv;
      else if (*v == "md" || *v == "markdown") format = doc::ExportFormat::md;
      else if (*v == "json") format = doc::ExportFormat::json;
      else throw Error(Exit::usage, fmt::format("--format must be csv, md or json, not '{}'", *v), "see abtrack help export");
    } else if (args.rest[i] == "--cells") {
      cells = true;
    } else {
      unknown_argument("export", args.rest[i], {"--format", "--cells"});
    }
  }
  if (!format) throw Error(Exit::usage, "export needs --format csv|md|json", "see abtrack help export");
  Context ctx = open_context(args.global);
  auto records = head_records(ctx);
  fmt::print("{}", doc::format_export(doc::export_table(ctx.plan, records, cells), *format));
  return 0;
}

}  // namespace abtrack::cli
