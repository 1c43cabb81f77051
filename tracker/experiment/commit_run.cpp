#include "experiment/commit_run.hpp"

#include "experiment/code_identity.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "doc/plot.hpp"
#include "doc/regions.hpp"
#include "doc/render.hpp"
#include "record/compare.hpp"
#include "stats/quantile.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"
#include "util/text.hpp"
#include "util/trace.hpp"
#include "util/version.hpp"

namespace abtrack::experiment {
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
    std::string verdict = stats::verdict_text(r);  // "~", "better", "better (exact)"
    // The baseline's samples are its pool (its runs on one code identity), up to its latest run.
    return fmt::format("baseline {} (n={}, pool to run {}); {} {}", util::format_number(r.median_a), r.n_a,
                       c.baseline_run, stats::delta_text(r), verdict);
  }
  return {};
}

// The plan's artifacts for a cell, hashed as they are now. A missing or unreadable file (or a
// path an axis value leads outside the repository) is recorded without a hash.
// A CUDA binary's compiled-code facts go with its hash (runner::cuda_facts).
std::vector<record::Artifact> hash_artifacts(const Context& ctx, const plan::Cell& cell,
                                             const std::filesystem::path& root) {
  std::vector<record::Artifact> out;
  auto relative = [&](const std::string& tpl) {
    return std::filesystem::path(plan::substitute(ctx.plan, cell, tpl, false)).lexically_normal().generic_string();
  };
  auto inside = [](const std::string& p) {
    return !p.empty() && p != ".." && !p.starts_with("../") && !p.starts_with("/");
  };
  for (std::size_t i = 0; i < ctx.plan.artifacts.size(); ++i) {
    record::Artifact a;
    a.path = relative(ctx.plan.artifacts[i]);
    std::error_code ec;
    auto file = root / a.path;
    if (inside(a.path) && std::filesystem::is_regular_file(file, ec)) {
      try {
        std::string bytes = util::read_file(file);
        a.sha256 = util::sha256_hex(bytes);
        a.bytes = bytes.size();
        const plan::ArtifactOptions options =
            i < ctx.plan.artifact_options.size() ? ctx.plan.artifact_options[i] : plan::ArtifactOptions{};
        std::string log = options.build_log.empty() ? std::string() : relative(options.build_log);
        if (!log.empty() && !inside(log)) log.clear();
        a.cuda = runner::cuda_facts(file, bytes, a.sha256, root / log, log,
                                    plan::substitute_regex(ctx.plan, cell, options.kernel));
      } catch (const Error&) {
        a.sha256.clear();
        a.cuda.reset();
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

// Whether the work tree's `path` (the document or the plot) is exactly what `abtrack render`
// makes of HEAD's records: abtrack's own output, which a step rewrites anyway, not an edit. Such
// a file is put back to HEAD's bytes so that the commit finds it clean.
// `head_doc`: HEAD's document (the base of the rendering); `records`: HEAD's, read on first use.
bool restore_if_only_ours(const Context& ctx, Progress& progress, const gitstore::PathStatus& s,
                          const std::string& head_doc, std::optional<std::vector<record::Record>>& records) {
  if (s.code != " M") return false;  // staged, new or deleted: the user's doing
  if (s.path != ctx.plan.doc && s.path != doc::plot_path(ctx.plan)) return false;
  auto head = ctx.repo.with_head([&](const gitstore::TreeView& t) { return t.read(s.path); });
  if (!head) return false;
  try {
    const std::string work = ctx.repo.read_work_tree(s.path);
    if (!records) records = head_records(ctx);
    const Rendering fresh = fresh_render(ctx, head_doc, *records);
    if (work != (s.path == ctx.plan.doc ? std::optional<std::string>(fresh.doc) : fresh.svg)) return false;
  } catch (const Error&) {
    return false;  // regions that do not parse: the user's edit
  }
  ctx.repo.write_work_tree(s.path, *head);
  progress.warn(
      fmt::format("{} differed from HEAD only in what abtrack writes there (e.g. after `abtrack render`): "
                  "this run rewrites it",
                  s.path));
  return true;
}

}  // namespace

bool preflight(const Context& ctx, Progress& progress) {
  ctx.repo.check_identity();
  check_paths_are_ours(ctx);
  // A document that cannot be made must stop us before anything runs, not after: one whose
  // regions do not parse, or that has none (init refuses such a document too).
  const std::string base = ctx.repo.with_head([&](const gitstore::TreeView& t) { return base_document(t, ctx); });
  if (doc::find_regions(base, ctx.plan.doc).empty())
    throw Error(Exit::usage, Location{ctx.plan.doc, 0, 0}, "the document has no abtrack region",
                "add <!-- abtrack:begin results --> and <!-- abtrack:end results --> on lines of their own "
                "(also summary and runs, if you want them)");
  auto scan =
      ctx.repo.settled_scan(doc::document_files(ctx.plan.doc), {std::string(plan::kRunsFolder)}, data_paths(ctx));
  watch_outputs(ctx);
  util::trace("preflight");
  std::vector<gitstore::PathStatus> changed;
  std::optional<std::vector<record::Record>> records;
  for (const auto& c : scan.watched)
    if (!restore_if_only_ours(ctx, progress, c, base, records)) changed.push_back(c);
  if (changed.empty()) return scan.other_changes;
  std::vector<std::string> lines;
  bool doc_untracked = false;
  const bool doc_in_head =
      ctx.repo.with_head([&](const gitstore::TreeView& t) { return t.read(ctx.plan.doc).has_value(); });
  for (const auto& c : changed) {
    lines.push_back(fmt::format("{} ({})", c.path, util::trim(c.code)));
    doc_untracked |= c.path == ctx.plan.doc && c.code == "??" && !doc_in_head;
  }
  std::string hint =
      doc_untracked
          ? "the document is not committed yet: run `abtrack init` to commit it"
          : fmt::format(
                "abtrack commits these files and never overwrites your edits: commit them (git commit {0}) or set them "
                "aside (git stash push -- {0}), then run again",
                changed.front().path);
  throw Error(Exit::environment, fmt::format("uncommitted changes in {}", fmt::join(lines, ", ")), hint);
}

std::string commit_message(const plan::Plan& plan, const record::Record& rec) {
  const auto& d = rec.data;
  std::string msg = one_line(
      fmt::format("abtrack({}): run {} {}: {}", plan.experiment, rec.run, rec.label(), runner::to_string(d.outcome)));
  msg += "\n\n";
  std::vector<std::string> body;
  if (!d.reason.empty()) body.push_back(d.reason);
  for (const auto& m : plan.metrics) {
    auto s = d.samples.find(m.name);
    if (s == d.samples.end() || s->second.empty()) continue;
    std::string line =
        fmt::format("{} median {} (n={})", m.name, util::format_number(stats::median(s->second)), s->second.size());
    if (rec.comparison)
      if (auto c = comparison_text(*rec.comparison, m.name); !c.empty()) line += " vs " + c;
    body.push_back(line);
  }
  for (const auto& g : d.gates) {
    if (!g.evaluated) body.push_back(fmt::format("gate {}: not evaluated", g.expression));
    else
      body.push_back(fmt::format("gate {}: {} (worst {})", g.expression, g.holds ? "holds" : "FAILS",
                                 util::format_number(*g.worst)));
  }
  for (const auto& b : body) msg += one_line(b) + "\n";
  msg += fmt::format(
      "\nAbtrack-Experiment: {}\nAbtrack-Run: {}\nAbtrack-Cell: {}\nAbtrack-Outcome: {}\nAbtrack-Code: {}\n",
      plan.experiment, rec.run, one_line(rec.label()), runner::to_string(d.outcome), rec.code.trailer());
  return msg;
}

std::string result_line(const plan::Plan& plan, const record::Record& rec) {
  // Run 0: a measurement not committed as a run (bisect's).
  std::string line = rec.run > 0
                         ? fmt::format("run {} {}: {}", rec.run, rec.label(), runner::to_string(rec.data.outcome))
                         : fmt::format("measured {}: {}", rec.label(), runner::to_string(rec.data.outcome));
  for (const auto& m : plan.metrics) {
    if (m.better == plan::Better::none) continue;
    auto s = rec.data.samples.find(m.name);
    if (s == rec.data.samples.end() || s->second.empty()) continue;
    line += fmt::format("  {} {}", m.name, util::format_number(stats::median(s->second)));
    if (rec.comparison)
      for (const auto& c : rec.comparison->metrics)
        if (c.metric == m.name)
          line += fmt::format(" ({} {})", stats::delta_text(c.result), stats::verdict_text(c.result));
  }
  if (!rec.data.reason.empty()) line += "  — " + one_line(rec.data.reason);
  // With throttle: invalid the reason says it already.
  else if (rec.data.throttled) line += fmt::format("  throttled: {}", fmt::join(*rec.data.throttled, ", "));
  return line;
}

record::Record draft_record(const Context& ctx, Progress& progress, const runner::Run& run, const record::Code& code,
                            const Revision* rev) {
  const runner::Environment& env = runner::environment();
  record::Record rec;
  rec.experiment = ctx.plan.experiment;
  rec.run = 0;
  rec.cell = record::cell_values(ctx.plan, run.cell);
  rec.data = run;
  rec.code = code;
  rec.code.recipe = plan::recipe(ctx.plan, run.cell);
  rec.env = env;
  runner::apply_watched_clocks(rec.env, run.invocations);
  rec.plan_sha256 = ctx.plan.sha256;
  rec.abtrack_version = std::string(version());
  rec.metric_specs = ctx.plan.metrics;
  rec.artifacts = hash_artifacts(ctx, run.cell, rev ? rev->dir : ctx.repo.workdir());
  // What was not measured or read says so, and the record keeps why (profiles, artifacts' cuda).
  for (const auto& p : run.profiles.or_empty())
    if (!p.ok())
      progress.warn(fmt::format(
          "{}: ncu {}: {}; {}", ctx.plan.label(run.cell), p.status, p.message,
          p.status == "incomplete"
              ? "the other ncu metrics were recorded"
              : fmt::format("{} not measured in this run (its timed invocations count)", fmt::join(p.metrics, ", "))));
  for (const auto& a : rec.artifacts)
    if (a.cuda && !a.cuda->error.empty())
      progress.warn(fmt::format("{}: the compiled-code facts of {} are incomplete: {}", ctx.plan.label(run.cell),
                                a.path, a.cuda->error));
  if (rev && rev->build) rec.build = *rev->build;
  rec.doc = ctx.plan.doc;
  // A revision's commands run in its own tree: what appears in the user's work tree meanwhile
  // is the user's, never an output.
  if (run.source == "command" && !rev)
    if (!note_outputs(ctx, progress, &run.cell).empty()) rec.code = without_outputs(ctx, rec.code);
  return rec;
}

record::Record commit_run(Context& ctx, Progress& progress, const record::Record& draft) {
  record::Record committed;
  auto result = ctx.repo.commit([&](const gitstore::TreeView& tip) {
    // Every record's header, but in full only the few dozen the document and plot read.
    auto history = load_step_history(ctx, tip, draft);
    // Idempotent: a measurement already in the tip (committed by a recovery) is not committed twice.
    if (history.has_measurement) {
      gitstore::Change none;
      none.skip = true;
      return none;
    }
    auto& records = history.records;
    record::Record rec = draft;
    rec.comparison.reset();
    // The number comes from the file names in the tip being built on (listed once, by
    // load_step_history), so concurrent writers never share one.
    rec.run = history.last_run + 1;
    records.push_back(rec);
    if (auto c = record::compare_run(ctx.plan, records)) records.back().comparison = std::move(*c);
    rec.comparison = records.back().comparison;
    gitstore::Change change;
    change.message = commit_message(ctx.plan, rec);
    change.files.emplace_back(record::record_path(rec.experiment, rec.run), record::to_json(rec));
    // The plot travels in the same commit; with nothing to plot an earlier plot stays (and stays linked).
    auto svg = ctx.plan.plot ? doc::plot_svg(ctx.plan, records) : std::nullopt;
    bool plot = svg.has_value() || tree_has_plot(tip, ctx.plan);
    change.files.emplace_back(ctx.plan.doc, rendered_document(base_document(tip, ctx), ctx.plan, records, plot,
                                                              history.runs_left_out, history.command_s_left_out));
    if (svg) change.files.emplace_back(doc::plot_path(ctx.plan), std::move(*svg));
    if (!rec.code.snapshot.empty()) {
      // A run number can come back (another branch, a reverted run): the earlier run's snapshot
      // keeps its ref, and this one gets its own beside it.
      std::string ref = fmt::format("refs/abtrack/snapshots/{}/{}", rec.experiment, rec.run);
      if (ctx.repo.ref_points_elsewhere(ref, rec.code.snapshot)) ref += "-" + rec.code.snapshot.substr(0, 12);
      change.refs.emplace_back(ref, rec.code.snapshot);
    }
    committed = rec;
    util::trace("record and document built");
    return change;
  });
  util::trace("committed and synced");
  if (result.commit.empty()) {
    for (const auto& r : head_records(ctx))
      if (r.data.id == draft.data.id) return r;
  }
  for (const auto& p : result.kept_edits)
    progress.warn(
        fmt::format("{} in the work tree is not what the run committed (edited while the run was going on, or a file "
                    "of yours at that path); your version is kept in the work tree and the committed one is in HEAD "
                    "(git diff {} shows the difference)",
                    p, p));
  if (ctx.repo.head_detached())
    progress.warn(fmt::format(
        "HEAD is detached: run {} is committed on no branch; `git branch NAME` keeps it before you check out "
        "another commit",
        committed.run));
  return committed;
}

namespace {

std::filesystem::path journal_dir(const Context& ctx) { return ctx.repo.state_dir() / "journal" / ctx.plan.experiment; }

// A measurement journaled by the process that measured it (util::JournalSlot: a slot file of
// .git/abtrack/journal/<experiment>/, written in place, fdatasync'd on a thread while the commit
// is built, locked while this lives: others leave it alone while that process lives, and the
// kernel drops the lock when it dies). The slot is freed only once the run is committed: when
// the commit throws (a stale lock, a full disk) the entry stays for the next invocation.
class JournalEntry {
 public:
  JournalEntry(const std::filesystem::path& dir, const std::string& content, Progress& progress)
      : m_slot(dir, content), m_progress(progress) {}
  ~JournalEntry() {
    int err = m_slot.wait();
    if (std::uncaught_exceptions() == m_exceptions) m_slot.clear();
    else if (err != 0)
      m_progress.warn(fmt::format("the journal entry in {} could not be made durable: {}", m_slot.file().string(),
                                  std::strerror(err)));
  }
  JournalEntry(const JournalEntry&) = delete;
  JournalEntry& operator=(const JournalEntry&) = delete;

 private:
  util::JournalSlot m_slot;
  Progress& m_progress;
  int m_exceptions = std::uncaught_exceptions();
};

}  // namespace

std::shared_ptr<void> journal_run(Context& ctx, Progress& progress, const record::Record& draft) {
  return std::make_shared<JournalEntry>(journal_dir(ctx), record::to_json(draft), progress);
}

record::Record journal_and_commit(Context& ctx, Progress& progress, const record::Record& draft) {
  JournalEntry entry(journal_dir(ctx), record::to_json(draft), progress);
  return commit_run(ctx, progress, draft);
}

int recover_journal(Context& ctx, Progress& progress) {
  int committed = 0;
  util::for_each_journal_entry(journal_dir(ctx), [&](const std::filesystem::path& where, const std::string& content) {
    record::Record draft;
    try {
      draft = record::parse_record(content, where.string());
    } catch (const Error&) {
      progress.warn(fmt::format("{} is not a readable journal entry; left in place", where.string()));
      return false;
    }
    auto cell = record::plan_cell(ctx.plan, draft.cell);
    if (!cell) {
      progress.warn(fmt::format("{} measured cell {}, which the plan no longer has; left in place", where.string(),
                                draft.label()));
      return false;
    }
    // A revision's run measured the commit (or the work tree's snapshot) its revision named, which
    // HEAD's history need not hold (another branch, a snapshot): its record names that code, so it
    // is committed here like any run of the plan, once that code is in this repository. Any other
    // run measured HEAD's code: one of code that HEAD's history does not hold was taken on another
    // branch, and is not committed here, where it would pass for a run of this code.
    if (!draft.cell.empty() && draft.cell.front().first == plan::kRevAxis) {
      for (const auto* id : {&draft.code.commit, &draft.code.snapshot})
        if (!id->empty() && ctx.repo.resolve(*id) != *id) {
          progress.warn(
              fmt::format("{} holds a measurement of {} on code {}, which this repository does not have; left in place",
                          where.string(), draft.label(), id->substr(0, 12)));
          return false;
        }
    } else if (!draft.code.commit.empty() && !ctx.repo.head_contains(draft.code.commit)) {
      progress.warn(fmt::format(
          "{} holds a measurement of {} on code {}, which HEAD's history does not contain (another branch?); "
          "left in place: check out that branch and run abtrack step to commit it",
          where.string(), draft.label(), draft.code.commit.substr(0, 12)));
      return false;
    }
    draft.data.cell = *cell;
    // The plan's metrics, with the scale and unit the measurement was taken with (the plan may
    // have changed them since: the samples are scaled already).
    draft.metric_specs = ctx.plan.metrics;
    const auto j = nlohmann::json::parse(content, nullptr, false);
    for (auto& m : draft.metric_specs) {
      if (!j.is_object() || !j.contains("metrics") || !j["metrics"].is_object() || !j["metrics"].contains(m.name))
        continue;
      const auto& e = j["metrics"][m.name];
      if (!e.is_object()) continue;
      if (e.contains("scale") && e["scale"].is_number()) m.scale = e["scale"].get<double>();
      m.unit = e.contains("unit") && e["unit"].is_string() ? e["unit"].get<std::string>() : "";
    }
    auto before = ctx.repo.head();
    auto rec = commit_run(ctx, progress, draft);
    if (ctx.repo.head() != before) {
      progress.print(result_line(ctx.plan, rec) +
                     "  (measured by an earlier invocation that was killed before committing it)\n");
      ++committed;
    }
    return true;
  });
  return committed;
}

}  // namespace abtrack::experiment
