#include "cli/context.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "doc/plot.hpp"
#include "doc/regions.hpp"
#include "doc/render.hpp"
#include "doc/template.hpp"
#include "plan/load.hpp"
#include "util/files.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"

namespace abtrack::cli {
namespace fs = std::filesystem;

Context open_context(const GlobalOptions& g) {
  auto repo = gitstore::Repository::discover(fs::current_path());
  util::trace("repository open");
  std::string name = g.plan.value_or("abtrack.yaml");
  fs::path file = fs::absolute(name);
  auto plan = plan::load_plan(file, name, repo.workdir());
  util::trace("plan loaded");
  for (const auto& w : plan.warnings) warn(format_diagnostic(w));
  auto cache = std::make_shared<record::RecordCache>(repo.state_dir() / "cache" / (plan.experiment + ".records"));
  return Context{std::move(repo), std::move(plan), name, std::move(cache)};
}

std::vector<record::Record> load_records(const Context& ctx, const gitstore::TreeView& tree, record::Part part,
                                         std::vector<std::string>* oids, int* last_run) {
  std::vector<record::Record> out;
  std::vector<std::string> ids;
  const std::string dir = ctx.plan.runs_dir();
  auto entries = tree.list(dir);
  // Room for the run a step appends: growing a vector of a thousand records costs more than
  // reading them.
  out.reserve(entries.size() + 1);
  ids.reserve(entries.size() + 1);
  int last = 0;
  for (auto& e : entries) {
    auto number = record::run_number_of(e.name);
    if (!number) continue;
    last = std::max(last, *number);
    if (!ctx.cache->get(e.oid, part, out.emplace_back())) {
      out.back() = record::parse_record(tree.read_blob(e.oid), dir + "/" + e.name);
      ctx.cache->insert(e.oid, out.back());
    }
    ids.push_back(std::move(e.oid));
  }
  ctx.cache->save();
  util::trace("records loaded");
  // Tree order is name order, which is run order up to 9999 (names widen past it).
  auto by_run = [](const record::Record& a, const record::Record& b) { return a.run < b.run; };
  if (!std::is_sorted(out.begin(), out.end(), by_run)) {
    std::vector<std::size_t> order(out.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return out[a].run < out[b].run; });
    std::vector<record::Record> sorted;
    std::vector<std::string> sorted_ids;
    sorted.reserve(out.size() + 1);
    for (auto i : order) {
      sorted.push_back(std::move(out[i]));
      sorted_ids.push_back(std::move(ids[i]));
    }
    out = std::move(sorted);
    ids = std::move(sorted_ids);
  }
  if (oids) *oids = std::move(ids);
  if (last_run) *last_run = last;
  return out;
}

void complete_records(const Context& ctx, const gitstore::TreeView& tree, std::vector<record::Record>& records,
                      const std::vector<std::string>& oids, const std::vector<bool>& which) {
  for (std::size_t i = 0; i < oids.size() && i < records.size(); ++i) {
    if (!which[i]) continue;
    record::Record full;
    if (ctx.cache->get(oids[i], record::Part::all, full)) records[i] = std::move(full);
    else records[i] = record::parse_record(tree.read_blob(oids[i]), record::record_path(records[i].experiment, records[i].run));
  }
  util::trace("records completed");
}

std::vector<record::Record> head_records(const Context& ctx) {
  return ctx.repo.with_head([&](const gitstore::TreeView& t) { return load_records(ctx, t); });
}

std::string base_document(const gitstore::TreeView& tree, const Context& ctx) {
  if (auto doc = tree.read(ctx.plan.doc)) return *doc;
  std::string tpl_name = ctx.plan.template_path.value_or("(built-in template)");
  std::string tpl = ctx.plan.template_path ? util::read_file(ctx.repo.workdir() / *ctx.plan.template_path)
                                           : std::string(doc::default_template());
  return doc::render_template(tpl, ctx.plan, tpl_name);
}

std::string rendered_document(const std::string& base, const plan::Plan& plan, const std::vector<record::Record>& records,
                              bool plot) {
  return doc::splice(base, plan.doc, doc::render_regions(plan, records, doc::RenderOptions{plot}));
}

bool tree_has_plot(const gitstore::TreeView& tree, const plan::Plan& plan) {
  return tree.read(doc::plot_path(plan)).has_value();
}

void warn(const std::string& message) { fmt::print(stderr, "abtrack: warning: {}\n", message); }

void info(const GlobalOptions& g, const std::string& message) {
  if (!g.quiet) fmt::print(stderr, "abtrack: {}\n", message);
}

std::optional<std::string> take_value(const std::vector<std::string>& args, std::size_t& i, std::string_view name) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) throw Error(Exit::usage, fmt::format("{} needs a value", name));
    i += 1;
    return args[i];
  }
  if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') return a.substr(name.size() + 1);
  return std::nullopt;
}

void unknown_argument(const std::string& command, const std::string& arg, const std::vector<std::string>& known) {
  std::string word = arg.substr(0, arg.find('='));
  throw Error(Exit::usage, fmt::format("{}: unknown argument '{}'{}", command, arg, util::suggestion_suffix(word, known)),
              fmt::format("see abtrack help {}", command));
}

}  // namespace abtrack::cli
