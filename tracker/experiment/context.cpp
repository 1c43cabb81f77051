#include "experiment/context.hpp"

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

namespace abtrack::experiment {
namespace fs = std::filesystem;

Context open_context(const std::optional<std::string>& plan_file, Progress& progress) {
  auto repo = gitstore::Repository::discover(fs::current_path());
  util::trace("repository open");
  // -p FILE is taken from the current directory; without it the plan is the nearest
  // abtrack.yaml from here up to the work tree's root, named in messages from here.
  const fs::path here = fs::current_path();
  fs::path file = plan_file ? fs::absolute(*plan_file) : plan::find_plan(here, repo.workdir());
  std::string name = plan_file ? *plan_file : file.lexically_relative(fs::weakly_canonical(here)).generic_string();
  auto plan = plan::load_plan(file, name, repo.workdir());
  util::trace("plan loaded");
  for (const auto& w : plan.warnings) progress.warn(format_diagnostic(w));
  auto cache = std::make_shared<record::RecordCache>(repo.state_dir() / "cache" / (plan.experiment + ".records"));
  return Context{std::move(repo), std::move(plan), name, std::move(cache), std::nullopt};
}

namespace {

// Sorts `items` by run number (`run_of(item)`). Tree order is name order, which is run order
// up to 9999 (names widen past it).
template <class T, class RunOf>
void sort_by_run(std::vector<T>& items, const RunOf& run_of) {
  auto by_run = [&](const T& a, const T& b) { return run_of(a) < run_of(b); };
  if (!std::is_sorted(items.begin(), items.end(), by_run)) std::sort(items.begin(), items.end(), by_run);
}

// The record of blob `oid` in full: from the cache, else parsed (and cached).
record::Record full_record(const Context& ctx, const gitstore::TreeView& tree, std::string_view oid,
                           const std::string& path) {
  record::Record r;
  if (ctx.cache->get(oid, record::Part::all, r)) return r;
  r = record::parse_record(tree.read_blob(oid), path);
  ctx.cache->insert(oid, r);
  return r;
}

}  // namespace

std::vector<record::Record> load_records(const Context& ctx, const gitstore::TreeView& tree, record::Part part) {
  std::vector<record::Record> out;
  const std::string dir = ctx.plan.runs_dir();
  auto entries = tree.list(dir);
  // Room for the run a step appends: growing a vector of a thousand records costs more than
  // reading them.
  out.reserve(entries.size() + 1);
  for (auto& e : entries) {
    if (!record::run_number_of(e.name)) continue;
    if (!ctx.cache->get(e.oid(), part, out.emplace_back())) {
      out.back() = record::parse_record(tree.read_blob(e.oid()), dir + "/" + e.name);
      ctx.cache->insert(e.oid(), out.back());
    }
  }
  ctx.cache->save();
  util::trace("records loaded");
  sort_by_run(out, [](const record::Record& r) { return r.run; });
  return out;
}

StepHistory load_step_history(const Context& ctx, const gitstore::TreeView& tree, const record::Record& next) {
  StepHistory out;
  const std::string dir = ctx.plan.runs_dir();
  auto entries = tree.list(dir);
  // Headers are views into the cache's frames, which outlive them.
  std::vector<std::pair<record::HeaderView, const gitstore::Entry*>> listed;
  listed.reserve(entries.size());
  for (const auto& e : entries) {
    auto number = record::run_number_of(e.name);
    if (!number) {
      // A dropped run's tombstone (`abtrack drop`: 0007.dropped) keeps its number taken.
      if (std::string_view name(e.name); name.ends_with(".dropped"))
        if (auto dropped = record::run_number_of(std::string(name.substr(0, name.size() - 8)) + ".json"))
          out.last_run = std::max(out.last_run, *dropped);
      continue;
    }
    out.last_run = std::max(out.last_run, *number);
    auto h = ctx.cache->header(e.oid());
    if (!h) {
      ctx.cache->insert(e.oid(), record::parse_record(tree.read_blob(e.oid()), dir + "/" + e.name));
      h = ctx.cache->header(e.oid());
      if (!h) throw Error(Exit::environment, fmt::format("cannot cache the record {}/{}", dir, e.name));
    }
    listed.emplace_back(*h, &e);
  }
  ctx.cache->save();
  util::trace("records loaded");
  sort_by_run(listed, [](const auto& l) { return l.first.run; });
  std::vector<record::HeaderView> headers;
  headers.reserve(listed.size() + 1);
  for (const auto& l : listed) headers.push_back(l.first);
  out.has_measurement =
      std::any_of(headers.begin(), headers.end(), [&](const record::HeaderView& h) { return h.id == next.data.id; });
  // The next run's header, last (the newest), through the cache's own encoding.
  std::string frame = record::encode_frame({}, next);
  record::decode_header(std::string_view(frame).substr(8), headers.emplace_back());
  auto full = doc::records_read_in_full(ctx.plan, headers);
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const gitstore::Entry& file = *listed[i].second;
    if (full[i]) out.records.push_back(full_record(ctx, tree, file.oid(), dir + "/" + file.name));
    else if (headers[i].experiment == ctx.plan.experiment)
      ++out.runs_left_out, out.command_s_left_out += headers[i].command_s;
  }
  // Room for the run the step appends.
  out.records.reserve(out.records.size() + 1);
  ctx.cache->save();
  util::trace("records completed");
  return out;
}

std::vector<record::Record> head_records(const Context& ctx) {
  return ctx.repo.with_head([&](const gitstore::TreeView& t) { return load_records(ctx, t); });
}

std::vector<std::string> other_documents(const gitstore::TreeView& tree, const std::string& experiment) {
  std::vector<std::string> out;
  for (const auto& other : tree.folders(std::string(plan::kRunsFolder))) {
    if (other == experiment) continue;
    const std::string dir = std::string(plan::kRunsFolder) + "/" + other;
    const gitstore::Entry* newest = nullptr;
    int newest_run = 0;
    auto entries = tree.list(dir);
    for (const auto& e : entries)
      if (auto n = record::run_number_of(e.name); n && *n > newest_run) {
        newest_run = *n;
        newest = &e;
      }
    if (!newest) continue;
    if (auto doc = record::document_named(tree.read_blob(newest->oid()))) out.push_back(std::move(*doc));
  }
  return out;
}

std::string base_document(const gitstore::TreeView& tree, const Context& ctx) {
  if (auto doc = tree.read(ctx.plan.doc)) return *doc;
  std::string tpl_name = ctx.plan.template_path.value_or("(built-in template)");
  std::string tpl = ctx.plan.template_path ? util::read_file(ctx.repo.workdir() / *ctx.plan.template_path)
                                           : std::string(doc::default_template());
  return doc::render_template(tpl, ctx.plan, tpl_name);
}

std::string rendered_document(const std::string& base, const plan::Plan& plan,
                              const std::vector<record::Record>& records, bool plot, std::size_t runs_left_out,
                              double command_s_left_out) {
  return doc::splice(base, plan.doc,
                     doc::render_regions(plan, records, doc::RenderOptions{plot, runs_left_out, command_s_left_out}));
}

bool tree_has_plot(const gitstore::TreeView& tree, const plan::Plan& plan) {
  return tree.read(doc::plot_path(plan)).has_value();
}

Rendering fresh_render(const Context& ctx, const std::string& base, const std::vector<record::Record>& records) {
  Rendering r;
  r.svg = ctx.plan.plot ? doc::plot_svg(ctx.plan, records) : std::nullopt;
  const bool plot =
      r.svg || ctx.repo.with_head([&](const gitstore::TreeView& t) { return tree_has_plot(t, ctx.plan); });
  r.doc = rendered_document(base, ctx.plan, records, plot);
  return r;
}

void check_paths_are_ours(const Context& ctx) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path prefix;
  for (const auto& part : fs::path(ctx.plan.doc)) {
    prefix /= part;
    if (!fs::is_symlink(ctx.repo.workdir() / prefix, ec)) continue;
    auto target = fs::read_symlink(ctx.repo.workdir() / prefix, ec).generic_string();
    throw Error(Exit::environment,
                fmt::format("{} is a symbolic link (to {}): a commit would put a file in its place",
                            prefix.generic_string(), target),
                "name the document's real path in the plan's doc:");
  }
  if (!doc::plan_has_plot(ctx.plan)) return;
  const std::string plot = doc::plot_path(ctx.plan);
  auto foreign = [](const std::optional<std::string>& text) {
    return text && text->find(doc::kPlotMarker) == std::string::npos;
  };
  std::optional<std::string> in_tree = ctx.repo.with_head([&](const gitstore::TreeView& t) { return t.read(plot); });
  std::optional<std::string> in_work_tree;
  if (fs::is_regular_file(ctx.repo.workdir() / plot, ec)) in_work_tree = util::read_file(ctx.repo.workdir() / plot);
  // (abtrack's plot in HEAD edited in the work tree is abtrack's: render puts it back)
  if (foreign(in_tree) || (!in_tree && foreign(in_work_tree)))
    throw Error(
        Exit::environment,
        fmt::format("{} is not a plot abtrack made, and abtrack writes the plot of {} there", plot, ctx.plan.doc),
        "rename your file, or set plot: false in the plan");
}

}  // namespace abtrack::experiment
