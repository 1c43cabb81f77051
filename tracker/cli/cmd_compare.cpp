// `abtrack compare`: statistics between two runs, or two files of samples.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "record/compare.hpp"
#include "stats/compare.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace abtrack::cli {
namespace {

std::vector<double> read_samples(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(Exit::usage, fmt::format("no file {}", path));
  std::vector<double> out;
  int line_no = 0;
  for (const auto& line : util::split(util::read_file(path), '\n')) {
    ++line_no;
    auto t = util::trim(line);
    if (t.empty() || t.front() == '#') continue;
    auto v = util::parse_double(t);
    if (!v)
      throw Error(Exit::usage, Location{path, line_no, 1}, fmt::format("'{}' is not a number", t),
                  "one number per line");
    if (!std::isfinite(*v)) throw Error(Exit::usage, Location{path, line_no, 1}, fmt::format("'{}' is not finite", t));
    out.push_back(*v);
  }
  if (out.empty()) throw Error(Exit::usage, Location{path, 0, 0}, "no samples", "one number per line");
  return out;
}

nlohmann::json bound(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

void print(const stats::Comparison& c, const std::string& name_a, const std::string& name_b, bool json) {
  if (json) {
    nlohmann::ordered_json j{
        {"median_a", c.median_a},
        {"median_b", c.median_b},
        {"ci_a", {bound(c.ci_a.lo), bound(c.ci_a.hi)}},
        {"ci_b", {bound(c.ci_b.lo), bound(c.ci_b.hi)}},
        {"p_value", c.p_value ? nlohmann::json(*c.p_value) : nlohmann::json(nullptr)},
        {"delta_pct", c.delta_pct},
        {"delta_ci_pct", {bound(c.delta_ci_pct.lo), bound(c.delta_ci_pct.hi)}},
        {"verdict", stats::to_string(c.verdict)},
        {"exact", c.exact},
        {"delta_abs", c.absolute ? bound(c.delta_abs) : nlohmann::json(nullptr)},
        {"delta_abs_ci",
         c.absolute ? nlohmann::json{bound(c.delta_abs_ci.lo), bound(c.delta_abs_ci.hi)} : nlohmann::json(nullptr)},
        {"method", c.exact ? std::string("exact change") : std::string(stats::to_string(c.method))},
        {"n_a", c.n_a},
        {"n_b", c.n_b},
        {"notes", c.notes}};
    fmt::print("{}\n", j.dump(2));
    return;
  }
  auto ci = [](const stats::Interval& i) {
    return i.bounded() ? fmt::format("[{}, {}]", util::format_number(i.lo), util::format_number(i.hi))
                       : std::string("[need ≥6 samples]");
  };
  fmt::print("A {}: median {} {} n={}\n", name_a, util::format_number(c.median_a), ci(c.ci_a), c.n_a);
  fmt::print("B {}: median {} {} n={}\n", name_b, util::format_number(c.median_b), ci(c.ci_b), c.n_b);
  std::string verdict = stats::verdict_text(c);
  std::string p = c.p_value ? fmt::format("p={}", util::format_number(*c.p_value)) : "p n/a";
  std::string delta_ci;
  if (c.exact) delta_ci = "";
  else if (c.absolute)
    delta_ci = c.delta_abs_ci.bounded() ? fmt::format(" [{}, {}]", util::format_number(c.delta_abs_ci.lo),
                                                      util::format_number(c.delta_abs_ci.hi))
                                        : " [unbounded]";
  else
    delta_ci = c.delta_ci_pct.bounded() ? fmt::format(" [{:+.1f}%, {:+.1f}%]", c.delta_ci_pct.lo, c.delta_ci_pct.hi)
                                        : " [unbounded]";
  fmt::print("B vs A: {}{}  {}  ({} n={}+{})\n", stats::delta_text(c), delta_ci, verdict, p, c.n_a, c.n_b);
  for (const auto& n : c.notes) fmt::print("note: {}\n", n);
}

}  // namespace

int cmd_compare(const Args& args) {
  bool json = false, samples_mode = false;
  std::optional<std::string> metric, better, alpha, min_effect;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.rest.size(); ++i) {
    const auto& a = args.rest[i];
    if (a == "--json") json = true;
    else if (a == "--samples") samples_mode = true;
    else if (auto v = take_value(args.rest, i, "--metric")) metric = v;
    else if (auto v = take_value(args.rest, i, "--better")) better = v;
    else if (auto v = take_value(args.rest, i, "--alpha")) alpha = v;
    else if (auto v = take_value(args.rest, i, "--min-effect")) min_effect = v;
    else if (!a.empty() && a[0] == '-' && !util::parse_double(a))
      unknown_argument("compare", a, {"--json", "--samples", "--metric", "--better", "--alpha", "--min-effect"});
    else positional.push_back(a);
  }
  if (positional.size() != 2)
    throw Error(Exit::usage, "compare needs two runs (or two files with --samples)",
                "abtrack compare 3 7, or abtrack compare --samples a.txt b.txt");
  stats::CompareOptions opts;
  if (better) opts.better = stats::parse_better(*better);
  if (alpha) {
    auto v = util::parse_double(*alpha);
    if (!v) throw Error(Exit::usage, fmt::format("--alpha '{}' is not a number", *alpha));
    opts.alpha = *v;
  }
  if (min_effect) {
    std::string s = *min_effect;
    if (!s.empty() && s.back() == '%') s.pop_back();
    auto v = util::parse_double(s);
    if (!v) throw Error(Exit::usage, fmt::format("--min-effect '{}' is not a percentage", *min_effect));
    opts.min_effect = *v / 100.0;
  }
  stats::check_options(opts);
  if (samples_mode && metric)
    throw Error(Exit::usage, "--metric picks a metric of two runs; with --samples each file is one metric's samples");
  if (samples_mode) {
    auto a = read_samples(positional[0]), b = read_samples(positional[1]);
    print(stats::compare(a, b, opts), positional[0], positional[1], json);
    return 0;
  }
  TerminalProgress progress(args.global);
  experiment::Context ctx = experiment::open_context(args.global.plan, progress);
  auto records = experiment::head_records(ctx);
  auto find = [&](const std::string& s) -> const record::Record& {
    auto n = util::parse_double(s);
    for (const auto& r : records)
      if (n && r.run == *n) return r;
    throw Error(Exit::usage, fmt::format("{} has no run {}", ctx.plan.experiment, s),
                fmt::format("its runs are 1 to {}", records.empty() ? 0 : records.back().run));
  };
  const auto& ra = find(positional[0]);
  const auto& rb = find(positional[1]);
  const plan::Metric* m = nullptr;
  if (metric) {
    m = ctx.plan.metric(*metric);
    if (!m) {
      std::vector<std::string> names;
      for (const auto& x : ctx.plan.metrics) names.push_back(x.name);
      throw Error(Exit::usage, fmt::format("unknown metric '{}'{}", *metric, util::suggestion_suffix(*metric, names)),
                  fmt::format("the plan's metrics are: {}", fmt::join(names, ", ")));
    }
  } else {
    auto compared = record::compared_metrics(ctx.plan);
    m = compared.empty() ? &ctx.plan.metrics.front() : compared.front();
  }
  if (!better && m->better == plan::Better::higher) opts.better = stats::Better::higher;
  auto sa = ra.data.samples.find(m->name), sb = rb.data.samples.find(m->name);
  if (sa == ra.data.samples.end() || sb == rb.data.samples.end())
    throw Error(Exit::usage, fmt::format("metric '{}' has no samples in run {}", m->name,
                                         sa == ra.data.samples.end() ? ra.run : rb.run));
  if (!json) fmt::print("{}:\n", m->name);
  print(stats::compare(sa->second, sb->second, opts), fmt::format("run {} {}", ra.run, ra.label()),
        fmt::format("run {} {}", rb.run, rb.label()), json);
  return 0;
}

}  // namespace abtrack::cli
