#include "experiment/rounds.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "experiment/code_identity.hpp"
#include "experiment/commit_run.hpp"
#include "experiment/scheduler.hpp"
#include "record/compare.hpp"
#include "runner/environment.hpp"
#include "stats/compare.hpp"
#include "stats/interval.hpp"
#include "stats/paired.hpp"
#include "util/text.hpp"

namespace abtrack::experiment {
namespace {

// The cells a verdict is decided for: those with a baseline cell other than themselves.
bool is_variant(const plan::Plan& plan, const plan::Cell& c) {
  auto base = plan.baseline_for(c);
  return base && !(*base == c);
}

// Where a variant cell stands after a round.
struct Standing {
  bool decided = false;
  std::string text;  // "worse: time_us +12.3% [+8.1%, +16.0%]", or why it has no verdict
};

const record::CellRuns* find_cell(const std::vector<record::CellRuns>& cells, const plan::Cell& c) {
  auto it = std::find_if(cells.begin(), cells.end(), [&](const record::CellRuns& x) { return x.cell == c; });
  return it == cells.end() ? nullptr : &*it;
}

// Judges every variant cell from `records`: its paired comparisons (Holm over the family of this
// invocation's cells and metrics with better:).
std::map<std::string, Standing> judge(const plan::Plan& plan, const std::vector<record::Record>& records,
                                      const std::vector<plan::Cell>& variants) {
  const auto cells = record::cells_with_runs(plan, records);
  struct Entry {
    std::string cell, metric;
  };
  std::vector<Entry> entries;
  std::vector<stats::Comparison> family;
  std::map<std::string, Standing> out;
  for (const auto& v : variants) {
    const std::string label = plan.label(v);
    const auto* cell = find_cell(cells, v);
    const auto* base_cell = find_cell(cells, *plan.baseline_for(v));
    if (!cell || !base_cell || !cell->latest() || !base_cell->latest()) continue;
    const record::CellRuns on_card = record::baseline_runs(*base_cell, *cell);  // as the document compares
    const auto* base = &on_card;
    if (cell->outcome() != runner::Outcome::pass || base->outcome() != runner::Outcome::pass) {
      out[label] =
          Standing{true, fmt::format("no verdict: {} {}",
                                     cell->outcome() != runner::Outcome::pass ? "its runs" : "the baseline's runs",
                                     (cell->outcome() != runner::Outcome::pass ? cell->outcome() : base->outcome()) ==
                                             runner::Outcome::fail
                                         ? "failed a gate"
                                         : "are invalid")};
      continue;
    }
    for (auto& m : record::compare_pools(plan, *base, *cell).metrics) {
      const auto* spec = plan.metric(m.metric);
      if (!spec || spec->better == plan::Better::none || m.result.analysis != "paired") continue;
      entries.push_back({label, m.metric});
      family.push_back(std::move(m.result));
    }
  }
  stats::adjust_family(family);
  for (std::size_t i = 0; i < family.size(); ++i) {
    const auto& c = family[i];
    const bool decided = c.verdict == stats::Verdict::better || c.verdict == stats::Verdict::worse ||
                         c.verdict == stats::Verdict::equivalent;
    auto [it, fresh] = out.try_emplace(entries[i].cell, Standing{true, ""});
    if (!fresh && it->second.text.starts_with("no verdict")) continue;
    it->second.decided = it->second.decided && decided;
    if (!it->second.text.empty()) it->second.text += "; ";
    it->second.text += fmt::format("{} {} {} [{:+.1f}%, {:+.1f}%]", stats::verdict_text(c), entries[i].metric,
                                   stats::delta_text(c), c.delta_ci_pct.lo, c.delta_ci_pct.hi);
  }
  return out;
}

// The mean and per-round standard deviation of a variant's log change against its baseline,
// from the rounds that paired them, else from their runs as invocations; and where they came from.
struct Noise {
  double mean = 0, sd = 0;
  std::string from;
};
std::optional<Noise> round_noise(const record::CellRuns& base, const record::CellRuns& cell,
                                 const std::string& metric) {
  bool sequential = false;
  const auto rounds = record::paired_rounds(base, cell, metric, sequential);
  auto mean_log = [](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += std::log(v);
    return s / static_cast<double>(x.size());
  };
  auto positive = [](const std::vector<double>& x) {
    return !x.empty() && std::all_of(x.begin(), x.end(), [](double v) { return v > 0; });
  };
  if (rounds.size() >= 2) {
    std::vector<double> d;
    for (const auto& r : rounds)
      if (positive(r.a) && positive(r.b)) d.push_back(mean_log(r.b) - mean_log(r.a));
    if (d.size() >= 2) {
      const double m = std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(d.size());
      double s2 = 0;
      for (double x : d) s2 += (x - m) * (x - m) / static_cast<double>(d.size() - 1);
      return Noise{m, std::sqrt(s2), fmt::format("{} paired rounds", d.size())};
    }
  }
  // Each run as one invocation: the spread of the runs' mean logs on each side.
  auto run_means = [&](const record::CellRuns& c) {
    std::vector<double> out;
    for (const auto* r : c.pool()) {
      auto s = r->data.samples.find(metric);
      if (r->data.outcome != runner::Outcome::invalid && s != r->data.samples.end() && positive(s->second))
        out.push_back(mean_log(s->second));
    }
    return out;
  };
  const auto a = run_means(base), b = run_means(cell);
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  auto mean_var = [](const std::vector<double>& x) {
    const double m = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
    double s2 = 0;
    for (double v : x) s2 += (v - m) * (v - m) / static_cast<double>(x.size() - 1);
    return std::pair{m, s2};
  };
  const auto [ma, va] = mean_var(a);
  const auto [mb, vb] = mean_var(b);
  return Noise{mb - ma, std::sqrt(va + vb), fmt::format("{} + {} runs, unpaired", a.size(), b.size())};
}

}  // namespace

std::vector<Unit> single_units(const std::vector<plan::Cell>& cells) {
  std::vector<Unit> out;
  for (const auto& c : cells) out.push_back({c});
  return out;
}

void append_round(Scheduled& out, const std::vector<Unit>& units, int round, runner::Schedule base,
                  std::mt19937_64& rng, bool shuffle) {
  std::vector<std::size_t> order(units.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (shuffle)
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  base.round = round;
  for (std::size_t gi : order) {
    Unit unit = units[gi];
    if (round % 2 == 0) std::reverse(unit.begin(), unit.end());
    for (auto& c : unit) {
      base.position = static_cast<int>(out.size()) + 1;
      out.emplace_back(std::move(c), base);
    }
  }
}

Scheduled fixed_rounds(const std::vector<Unit>& units, int rounds, std::uint64_t seed, bool interleaved) {
  std::mt19937_64 rng(seed);
  Scheduled out;
  const runner::Schedule base{1, rounds, seed, 1, interleaved ? new_batch_id() : ""};
  for (int r = 1; r <= rounds; ++r) append_round(out, units, r, base, rng, interleaved);
  return out;
}

void run_auto_rounds(Context& ctx, Progress& progress, const std::vector<Unit>& given, const AutoRounds& opts,
                     std::vector<record::Record>& records, const std::function<void(const Scheduled&)>& run_round) {
  const plan::Plan& plan = ctx.plan;
  // Every variant's baseline runs in the same rounds, whether or not it needed a run itself.
  std::vector<Unit> units = given;
  std::vector<plan::Cell> variants;
  auto present = [&](const plan::Cell& c) {
    return std::any_of(units.begin(), units.end(),
                       [&](const Unit& u) { return std::find(u.begin(), u.end(), c) != u.end(); });
  };
  for (const auto& u : given)
    for (const auto& c : u)
      if (is_variant(plan, c)) {
        variants.push_back(c);
        if (!present(*plan.baseline_for(c))) units.push_back({*plan.baseline_for(c)});
      }
  std::mt19937_64 rng(opts.seed);
  const bool resumed = !opts.batch.empty();
  const runner::Schedule base{1, opts.max_rounds, opts.seed, 1, resumed ? opts.batch : new_batch_id(), true};
  const std::vector<record::Record> head = opts.dry_run || resumed ? head_records(ctx) : std::vector<record::Record>{};
  progress.info(fmt::format(
      "rounds: auto, up to {} rounds{} of {} cell{}, order shuffled with seed {}{}", opts.max_rounds,
      opts.budget_s ? fmt::format(" or {:g} s", *opts.budget_s) : "", variants.size(), variants.size() == 1 ? "" : "s",
      opts.seed, resumed ? fmt::format("; continuing batch {} after its round {}", opts.batch, opts.after_round) : ""));
  // A continued batch starts where it stood: its decided cells stay out of play.
  std::map<std::string, Standing> standing = resumed ? judge(plan, head, variants) : std::map<std::string, Standing>{};
  std::map<std::string, int> decided_at;
  const auto start = std::chrono::steady_clock::now();
  double last_round_s = 0;
  int rounds_run = opts.after_round;
  std::string stop_reason = fmt::format("max_rounds {}", opts.max_rounds);
  for (int r = opts.after_round + 1; r <= opts.max_rounds; ++r) {
    std::vector<Unit> play;
    for (const auto& u : units) {
      const bool needed = r == 1 || std::any_of(u.begin(), u.end(), [&](const plan::Cell& c) {
                            if (is_variant(plan, c)) return !standing[plan.label(c)].decided;
                            // A baseline plays while a variant of it is undecided.
                            return std::any_of(variants.begin(), variants.end(), [&](const plan::Cell& v) {
                              return *plan.baseline_for(v) == c && !standing[plan.label(v)].decided;
                            });
                          });
      if (needed) play.push_back(u);
    }
    if (play.empty()) {
      stop_reason.clear();
      break;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (opts.budget_s && r > opts.after_round + 1 && elapsed + last_round_s > *opts.budget_s) {
      stop_reason = fmt::format("the budget of {:g} s ({:.0f} s spent, a round takes {:.0f} s)", *opts.budget_s,
                                elapsed, last_round_s);
      break;
    }
    Scheduled sched;
    append_round(sched, play, r, base, rng, opts.shuffle);
    const auto t0 = std::chrono::steady_clock::now();
    run_round(sched);
    last_round_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rounds_run = r;
    if (r < 2) continue;
    std::vector<record::Record> all;
    if (opts.dry_run) {
      all = head;
      int next = all.empty() ? 1 : all.back().run + 1;
      for (auto rec : records) {
        rec.run = next++;
        all.push_back(std::move(rec));
      }
    } else {
      all = head_records(ctx);
    }
    for (auto& [label, s] : judge(plan, all, variants)) {
      if (s.decided && !standing[label].decided) decided_at[label] = r;
      standing[label] = s;
    }
  }
  for (const auto& v : variants) {
    const std::string label = plan.label(v);
    const Standing& s = standing[label];
    if (s.decided)
      progress.info(fmt::format("{}: {} (decided after {} round{})", label, s.text, decided_at[label],
                                decided_at[label] == 1 ? "" : "s"));
    else
      progress.info(fmt::format("{}: undecided after {} round{} ({}){}", label, rounds_run, rounds_run == 1 ? "" : "s",
                                stop_reason.empty() ? "stopped" : stop_reason, s.text.empty() ? "" : ": " + s.text));
  }
}

std::optional<std::vector<plan::Cell>> continue_unfinished_batch(const Context& ctx, Progress& progress,
                                                                 AutoRounds& opts) {
  const auto records = head_records(ctx);
  auto latest = std::max_element(records.begin(), records.end(),
                                 [](const record::Record& a, const record::Record& b) { return a.run < b.run; });
  if (latest == records.end() || !latest->data.schedule || !latest->data.schedule->sequential ||
      latest->data.schedule->batch.empty())
    return std::nullopt;
  const std::string& batch = latest->data.schedule->batch;
  int rounds = 0;
  std::vector<plan::Cell> cells, variants;
  for (const auto& c : ctx.plan.cells()) {
    const auto values = record::cell_values(ctx.plan, c);
    bool ran = false;
    for (const auto& r : records)
      if (r.data.schedule && r.data.schedule->batch == batch && r.cell == values) {
        rounds = std::max(rounds, r.data.schedule->round);
        ran = true;
      }
    if (!ran) continue;
    cells.push_back(c);
    if (is_variant(ctx.plan, c)) variants.push_back(c);
  }
  if (rounds >= opts.max_rounds) return std::nullopt;
  const auto standing = judge(ctx.plan, records, variants);
  if (std::none_of(variants.begin(), variants.end(), [&](const plan::Cell& v) {
        auto it = standing.find(ctx.plan.label(v));
        return it == standing.end() || !it->second.decided;
      }))
    return std::nullopt;
  // New code would start pools of its own, with only the rounds this batch has left. (A dry run
  // makes no snapshot to tell.)
  if (ctx.plan.revisions.empty() && !opts.dry_run) {
    const record::Code now = code_identity(ctx, progress);
    if (!now.same_code(latest->code)) {
      progress.info(
          fmt::format("not continuing the unfinished rounds: auto batch {} ({} of {} rounds): it measured "
                      "code {}, the work tree holds {}; `abtrack run --all` starts a batch on this code",
                      batch, rounds, opts.max_rounds, latest->code.short_name(), now.short_name()));
      return std::nullopt;
    }
  }
  // Its rounds pair only with rounds on the same card (another card is a pool of its own).
  const auto there = record::gpu_kinds(*latest), here = runner::gpu_kinds(runner::environment().gpus);
  if (!runner::has_kinds(here, there))
    throw Error(
        Exit::environment,
        fmt::format("the unfinished rounds: auto batch {} ({} of {} rounds) ran on {}; this machine has {}", batch,
                    rounds, opts.max_rounds, runner::describe_kinds(there), runner::describe_kinds(here)),
        "its rounds would not pair with this card's: run it on " + runner::describe_kinds(there) +
            ", or `abtrack run --all` to start a new batch here");
  opts.batch = batch;
  opts.after_round = rounds;
  return cells;
}

std::vector<std::string> expected_rounds(const Context& ctx, int max_rounds) {
  const plan::Plan& plan = ctx.plan;
  const plan::Metric* primary = nullptr;
  for (const auto& m : plan.metrics)
    if (m.better != plan::Better::none) {
      primary = &m;
      break;
    }
  std::vector<std::string> lines;
  if (!primary || !plan.baseline) return lines;
  const auto records = head_records(ctx);
  const auto cells = record::cells_with_runs(plan, records);
  const double delta = std::log1p(plan.min_effect_pct / 100);
  // A verdict needs its Holm-adjusted p-value below alpha: the family's first step asks for
  // alpha / m, m its comparisons (each compared cell by each metric with better:), so the
  // estimate is made at that level (a later step asks less, so it may come a round sooner).
  const auto better = std::count_if(plan.metrics.begin(), plan.metrics.end(),
                                    [](const plan::Metric& m) { return m.better != plan::Better::none; });
  const auto compared = std::count_if(cells.begin(), cells.end(), [&](const record::CellRuns& c) {
    const auto* base = is_variant(plan, c.cell) ? find_cell(cells, *plan.baseline_for(c.cell)) : nullptr;
    return base && c.latest() && base->latest();
  });
  const double alpha = plan.alpha / static_cast<double>(std::max<std::ptrdiff_t>(better * compared, 1));
  for (const auto& c : cells) {
    if (!is_variant(plan, c.cell)) continue;
    const auto* base = find_cell(cells, *plan.baseline_for(c.cell));
    std::optional<Noise> noise;
    if (base && c.latest() && base->latest()) noise = round_noise(record::baseline_runs(*base, c), c, primary->name);
    if (!noise) {
      lines.push_back(
          fmt::format("{}: no recorded pools to judge by (needs 2 runs of it and of its baseline, or 2 paired rounds)",
                      plan.label(c.cell)));
      continue;
    }
    auto show = [&](std::optional<std::size_t> n) {
      return n ? fmt::format("~{}", *n) : fmt::format("more than {}", max_rounds);
    };
    lines.push_back(fmt::format(
        "{}: {} {:+.1f}%, per-round noise {:.2f}% (from {}): fixed rounds {}, rounds: auto {} (max_rounds {})",
        plan.label(c.cell), primary->name, stats::pct_of_log_ratio(noise->mean), noise->sd * 100, noise->from,
        show(stats::expected_rounds(noise->mean, noise->sd, delta, alpha, false, static_cast<std::size_t>(max_rounds))),
        show(stats::expected_rounds(noise->mean, noise->sd, delta, alpha, true, static_cast<std::size_t>(max_rounds))),
        max_rounds));
  }
  return lines;
}

}  // namespace abtrack::experiment
