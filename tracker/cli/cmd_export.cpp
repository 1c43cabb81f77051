// `abtrack export`: the committed runs (or cells) as CSV, markdown or JSON on stdout.
#include <algorithm>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "doc/export.hpp"

namespace abtrack::cli {
namespace {

// HEAD's records of the experiment, each parsed from its file: per-run rows show the run's own
// comparison, which the record cache (head_records) does not keep.
std::vector<record::Record> records_in_full(const experiment::Context& ctx) {
  auto out = ctx.repo.with_head([&](const gitstore::TreeView& tree) {
    std::vector<record::Record> records;
    const std::string dir = ctx.plan.runs_dir();
    for (const auto& e : tree.list(dir))
      if (record::run_number_of(e.name))
        records.push_back(record::parse_record(tree.read_blob(e.oid()), dir + "/" + e.name));
    return records;
  });
  std::sort(out.begin(), out.end(), [](const record::Record& a, const record::Record& b) { return a.run < b.run; });
  return out;
}

}  // namespace

int cmd_export(const Args& args) {
  std::optional<doc::ExportFormat> format;
  bool cells = false;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    if (auto v = take_value(args.rest, i, "--format")) {
      if (*v == "csv") format = doc::ExportFormat::csv;
      else if (*v == "md" || *v == "markdown") format = doc::ExportFormat::md;
      else if (*v == "json") format = doc::ExportFormat::json;
      else
        throw Error(Exit::usage, fmt::format("--format must be csv, md or json, not '{}'", *v),
                    "see abtrack help export");
    } else if (args.rest[i] == "--cells") {
      cells = true;
    } else {
      unknown_argument("export", args.rest[i], {"--format", "--cells"});
    }
  }
  if (!format) throw Error(Exit::usage, "export needs --format csv|md|json", "see abtrack help export");
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  auto records = cells ? experiment::head_records(ctx) : records_in_full(ctx);
  fmt::print("{}", doc::format_export(doc::export_table(ctx.plan, records, cells), *format));
  return 0;
}

}  // namespace abtrack::cli
