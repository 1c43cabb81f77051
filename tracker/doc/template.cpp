#include "doc/template.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kainjow/mustache.hpp>

#include "doc/regions.hpp"
#include "doc/render.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

std::string or_placeholder(const std::string& s, const char* placeholder) {
  return util::trim(s).empty() ? std::string(placeholder) : std::string(util::trim(s));
}

std::string assignment_text(const plan::Assignment& a) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : a) parts.push_back(k + "=" + escape_cell(v));
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string percent(double v) { return fmt::format("{:+g}%", v); }

}  // namespace

std::string render_template(std::string_view tpl, const plan::Plan& plan, const std::string& name) {
  kainjow::mustache::mustache m{std::string(tpl)};
  if (!m.is_valid()) throw Error(Exit::usage, Location{name, 0, 0}, "template does not parse: " + m.error_message());

  std::vector<std::string> axes;
  for (const auto& a : plan.axes) {
    // Values are the user's data: escaped, so none can open an HTML comment or a region marker.
    std::vector<std::string> values;
    for (const auto& v : a.values) values.push_back(escape_cell(v));
    axes.push_back(fmt::format("`{}` ∈ {{{}}}", a.name, fmt::join(values, ", ")));
  }
  std::vector<std::string> excluded;
  for (const auto& e : plan.exclude) excluded.push_back(assignment_text(e));
  std::string prediction = "(none stated)";
  if (plan.prediction) {
    const auto& p = *plan.prediction;
    prediction = fmt::format("`{}` changes by {}", p.metric, percent(p.change_pct));
    if (p.range_pct)
      prediction +=
          fmt::format(" (expected range {} to {})", percent(p.range_pct->first), percent(p.range_pct->second));
    prediction += " against the baseline.";
  }
  std::string baseline =
      plan.baseline
          ? fmt::format("{}; each cell is compared with the baseline cell that has its values on the other axes.",
                        assignment_text(*plan.baseline))
          : std::string("(none: cells are not compared)");
  std::string gates;
  for (const auto& g : plan.gates) gates += fmt::format("- `{}`\n", g.text);
  if (gates.empty()) gates = "- (none)\n";
  gates.pop_back();

  // Where the command runs: a revision's cells run in that revision's own checkout, not here.
  std::string where;
  if (plan.revisions.empty())
    where =
        plan.workdir.empty() ? "from the repository root" : fmt::format("from `{}` in the repository", plan.workdir);
  else {
    where = plan.workdir.empty() ? "from the root of" : fmt::format("from `{}` in", plan.workdir);
    where += " its revision's own checkout of that revision's code (never your work tree)";
    if (!util::trim(plan.build).empty()) where += ", once `build:` has built it there";
  }

  kainjow::mustache::data d;
  d.set("title", plan.title);
  d.set("experiment", plan.experiment);
  d.set("doc", plan.doc);
  d.set("what", or_placeholder(plan.what, "(what is tested)"));
  d.set("why", or_placeholder(plan.why, "(why it might help)"));
  d.set("how", or_placeholder(plan.how, "(how it is measured)"));
  d.set("command", plan.command);
  d.set("where", where);
  d.set("axes", fmt::format("{}", fmt::join(axes, " × ")));
  if (excluded.empty()) d.set("excluded", kainjow::mustache::data::type::bool_false);
  else d.set("excluded", fmt::format("{}", fmt::join(excluded, ", ")));
  d.set("prediction", prediction);
  d.set("baseline", baseline);
  d.set("gates", gates);
  std::string out = m.render(d);
  if (!m.is_valid()) throw Error(Exit::usage, Location{name, 0, 0}, "template does not render: " + m.error_message());
  std::vector<Region> regions;
  try {
    regions = find_regions(out, name);
  } catch (const Error& e) {
    throw Error(Exit::usage, Location{name, 0, 0},
                "the document made from this template has a broken region: " + e.diagnostics().front().message,
                "does a plan value (title, what, why, how, command) contain an <!-- abtrack:... --> marker?");
  }
  if (regions.empty())
    throw Error(Exit::usage, Location{name, 0, 0}, "template has no abtrack region",
                "add <!-- abtrack:begin results --> and <!-- abtrack:end results --> on lines of their own");
  return out;
}

}  // namespace abtrack::doc
