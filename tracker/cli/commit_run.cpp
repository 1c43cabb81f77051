#include "cli/commit_run.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "record/compare.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace abtrack::cli {
namespace {

// Trailer values and the subject are single lines.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string comparison_text(const record::Comparison& c, const std::string& metric) {
  for (const auto& m : c.metrics) {
    if (m.metric != metric) continue;
    const auto& r = m.result;
    std::string verdict = r.verdict == stats::Verdict::same ? "~" : std::string(stats::to_string(r.verdict));
    return fmt::format("baseline run {} {}; {:+.1f}% {}", c.baseline_run, util::format_number(r.median_a), r.delta_pct, verdict);
  }
  return {};
}

}  // namespace

void preflight(const Context& ctx) {
  ctx.repo.check_identity();
  // A document that cannot be made must stop us before anything runs, not after.
  ctx.repo.with_head([&](const gitstore::TreeView& t) { return base_document(t, ctx); });
  auto changed = ctx.repo.settled_status({ctx.plan.doc, ctx.plan.runs_dir() + "/"});
  if (changed.empty()) return;
  std::vector<std::string> lines;
  bool doc_untracked = false;
  for (const auto& c : changed) {
    lines.push_back(fmt::format("{} ({})", c.path, util::trim(c.code)));
    doc_untracked |= c.path == ctx.plan.doc && c.code == "??";
  }
  std::string hint = doc_untracked
      ? "the document is not committed yet: run `abtrack init` to commit it"
      : fmt::format("abtrack commits these files and never overwrites your edits: commit them (git commit {0}) or set them "
                    "aside (git stash push -- {0}), then run again",
                    changed.front().path);
  throw Error(Exit::environment, fmt::format("uncommitted changes in {}", fmt::join(lines, ", ")), hint);
}

record::Code code_identity(const Context& ctx) {
  record::Code code;
  // abtrack's own run commits change only records and the document, so the code of HEAD is
  // the code its run named: every run on unchanged code shares one identity.
  if (auto head = ctx.repo.head_entry()) {
    code.commit = head->commit;
    std::string named = head->trailer("Abtrack-Code");
    if (!head->trailer("Abtrack-Run").empty() && named.size() >= 40 && named.substr(0, 6) != "unborn")
      code.commit = named.substr(0, 40);
  }
  code.dirty = ctx.repo.dirty();
  if (code.dirty) {
    try {
      code.snapshot = ctx.repo.snapshot(fmt::format("abtrack({}): snapshot of the work tree", ctx.plan.experiment),
                                        code.commit.empty() ? std::nullopt : std::optional<std::string>(code.commit),
                                        {ctx.plan.doc, ctx.plan.runs_dir() + "/"});
    } catch (const Error& e) {
      warn("could not snapshot the work tree (the record says dirty without a snapshot): " + e.diagnostics().front().message);
    }
  }
  return code;
}

std::string commit_message(const plan::Plan& plan, const record::Record& rec) {
  const auto& d = rec.data;
  std::string msg = one_line(fmt::format("abtrack({}): run {} {}: {}", plan.experiment, rec.run, rec.label(), runner::to_string(d.outcome)));
  msg += "\n\n";
  std::vector<std::string> body;
  if (!d.reason.empty()) body.push_back(d.reason);
  for (const auto& m : plan.metrics) {
    auto s = d.samples.find(m.name);
    if (s == d.samples.end() || s->second.empty()) continue;
    std::string line = fmt::format("{} median {} (n={})", m.name, util::format_number(stats::median(s->second)), s->second.size());
    if (rec.comparison)
      if (auto c = comparison_text(*rec.comparison, m.name); !c.empty()) line += " vs " + c;
    body.push_back(line);
  }
  for (const auto& g : d.gates) {
    if (!g.evaluated) body.push_back(fmt::format("gate {}: not evaluated", g.expression));
    else body.push_back(fmt::format("gate {}: {} (worst {})", g.expression, g.holds ? "holds" : "FAILS", util::format_number(*g.worst)));
  }
  for (const auto& b : body) msg += one_line(b) + "\n";
  msg += fmt::format("\nAbtrack-Experiment: {}\nAbtrack-Run: {}\nAbtrack-Cell: {}\nAbtrack-Outcome: {}\nAbtrack-Code: {}\n",
                     plan.experiment, rec.run, one_line(rec.label()), runner::to_string(d.outcome), rec.code.trailer());
  return msg;
}

std::string result_line(const plan::Plan& plan, const record::Record& rec) {
  std::string line = fmt::format("run {} {}: {}", rec.run, rec.label(), runner::to_string(rec.data.outcome));
  for (const auto& m : plan.metrics) {
    if (m.better == plan::Better::none) continue;
    auto s = rec.data.samples.find(m.name);
    if (s == rec.data.samples.end() || s->second.empty()) continue;
    line += fmt::format("  {} {}", m.name, util::format_number(stats::median(s->second)));
    if (rec.comparison)
      for (const auto& c : rec.comparison->metrics)
        if (c.metric == m.name)
          line += fmt::format(" ({:+.1f}% {})", c.result.delta_pct,
                              c.result.verdict == stats::Verdict::same ? "~" : stats::to_string(c.result.verdict));
  }
  if (!rec.data.reason.empty()) line += "  — " + one_line(rec.data.reason);
  return line;
}

record::Record commit_run(Context& ctx, const runner::Run& run, const record::Code& code) {
  static const runner::Environment env = runner::probe_environment();
  record::Record committed;
  auto result = ctx.repo.commit([&](const gitstore::TreeView& tip) {
    auto records = load_records(ctx, tip);
    record::Record rec;
    rec.experiment = ctx.plan.experiment;
    // The number comes from the tip being built on, so concurrent writers never share one.
    rec.run = 1;
    for (const auto& e : tip.list(ctx.plan.runs_dir()))
      if (auto n = record::run_number_of(e.name)) rec.run = std::max(rec.run, *n + 1);
    rec.cell = record::cell_values(ctx.plan, run.cell);
    rec.data = run;
    rec.code = code;
    rec.env = env;
    rec.plan_sha256 = ctx.plan.sha256;
    rec.abtrack_version = std::string(version());
    rec.metric_specs = ctx.plan.metrics;
    if (auto base_cell = ctx.plan.baseline_for(run.cell); base_cell && !(*base_cell == run.cell) &&
                                                          run.outcome == runner::Outcome::pass) {
      auto cells = record::cells_with_runs(ctx.plan, records);
      auto it = std::find_if(cells.begin(), cells.end(), [&](const record::CellRuns& c) { return c.cell == *base_cell; });
      if (it != cells.end() && it->latest() && it->outcome() == runner::Outcome::pass)
        rec.comparison = record::compare_with_baseline(ctx.plan, *it, run.samples);
    }
    records.push_back(rec);
    gitstore::Change change;
    change.message = commit_message(ctx.plan, rec);
    change.files.emplace_back(record::record_path(rec.experiment, rec.run), record::to_json(rec));
    change.files.emplace_back(ctx.plan.doc, rendered_document(base_document(tip, ctx), ctx.plan, records));
    if (!code.snapshot.empty())
      change.refs.emplace_back(fmt::format("refs/abtrack/snapshots/{}/{}", rec.experiment, rec.run), code.snapshot);
    committed = rec;
    return change;
  });
  for (const auto& p : result.kept_edits)
    warn(fmt::format("{} was edited while the run was going on; your edits are kept in the work tree and the committed "
                     "version is in HEAD (git diff {} shows the difference)",
                     p, p));
  return committed;
}

}  // namespace abtrack::cli
