#include <doctest/doctest.h>

#include <filesystem>

#include "doc/plot.hpp"
#include "doc/regions.hpp"
#include "doc/render.hpp"
#include "doc/template.hpp"
#include "plan/load.hpp"
#include "record/cache.hpp"

using namespace abtrack;

namespace {

plan::Plan demo_plan() {
  return plan::parse_plan(R"(experiment: occ
title: Occupancy
doc: AB.md
prediction: {metric: t, change: -10%, range: [-20%, -5%]}
axes: {warps: [4, 8], batch: ["a|b", "<!-- abtrack:end results -->"]}
baseline: {warps: 4}
command: bench
metrics:
  t: {json: t, better: lower, unit: us}
  err: {json: err}
gates: [err <= 0.01]
)",
                          "abtrack.yaml", std::filesystem::temp_directory_path());
}

record::Record make_record(const plan::Plan& p, int run, const plan::Cell& cell, std::vector<double> t, double err) {
  record::Record r;
  r.experiment = p.experiment;
  r.run = run;
  r.cell = record::cell_values(p, cell);
  r.data.samples["t"] = std::move(t);
  r.data.samples["err"] = {err};
  r.data.outcome = err <= 0.01 ? runner::Outcome::pass : runner::Outcome::fail;
  r.data.gates = gates::evaluate(p.gates, r.data.samples);
  if (r.data.outcome == runner::Outcome::fail) r.data.reason = "gate 'err <= 0.01' does not hold";
  r.code.commit = std::string(40, 'a');
  return r;
}

std::vector<double> series(double base, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(base * (1 + 0.001 * ((i * 7) % 10)));
  return v;
}

// The headers of `recs` as a step reads them: views into their cache frames, kept in `frames`.
std::vector<record::HeaderView> headers_of(const std::vector<record::Record>& recs, std::vector<std::string>& frames) {
  for (const auto& r : recs) frames.push_back(record::encode_frame(std::string(40, '0'), r));
  std::vector<record::HeaderView> headers(recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i)
    record::decode_header(std::string_view(frames[i]).substr(8), headers[i]);
  return headers;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the results table has a row per cell, pending cells marked, values escaped") {
  auto p = demo_plan();
  auto cells = p.cells();
  std::vector<record::Record> recs{make_record(p, 1, cells[0], series(100, 20), 0.001),
                                   make_record(p, 2, cells[2], series(90, 20), 0.001)};
  auto regions = doc::render_regions(p, recs);
  const auto& t = regions["results"];
  CHECK(count(t, "\n| ") == 5);  // the separator and 4 rows follow the header
  CHECK(t.find("a\\|b") != std::string::npos);
  CHECK(t.find("&lt;!-- abtrack:end results --&gt;") != std::string::npos);
  CHECK(t.find("<!--") == std::string::npos);
  CHECK(count(t, "pending") == 2);
  CHECK(t.find("baseline") != std::string::npos);
  CHECK(t.find("-10.0%") != std::string::npos);
  CHECK(t.find("better") != std::string::npos);
  // Every table line has the same number of unescaped pipes.
  std::size_t expected = 0;
  std::size_t pos = 0;
  while (pos < t.size() && t[pos] == '|') {
    auto nl = t.find('\n', pos);
    std::string line = t.substr(pos, nl - pos);
    std::size_t pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++pipes;
    if (!expected) expected = pipes;
    CHECK(pipes == expected);
    pos = nl + 1;
  }
  CHECK(expected == 10);  // warps, batch, n, t, Δ t, err, gates, outcome, run: 9 columns
  // The rendered regions splice back into a document and are found again.
  std::string docu = doc::render_template(doc::default_template(), p, "ab.md");
  auto spliced = doc::splice(docu, "AB.md", regions);
  CHECK(doc::region_contents(spliced, "AB.md")["results"] == t);
}

TEST_CASE("a failed cell gets no verdict, rendering is deterministic") {
  auto p = demo_plan();
  auto cells = p.cells();
  std::vector<record::Record> recs{make_record(p, 1, cells[0], series(100, 20), 0.001),
                                   make_record(p, 2, cells[2], series(90, 20), 0.5)};
  auto a = doc::render_regions(p, recs);
  auto b = doc::render_regions(p, recs);
  CHECK(a == b);
  CHECK(a["results"].find("no verdict: a gate failed") != std::string::npos);
  CHECK(a["summary"].find("**2 of 4 cells measured**: 1 pass, 1 fail, 0 invalid; 2 pending.") != std::string::npos);
  CHECK(a["summary"].find("2 runs committed, 0.0 s in their commands.") != std::string::npos);
  // What the runs cost the machine adds up over every record: the invocations and ncu profiles.
  recs[0].data.command_s = 61.5;
  recs[1].data.command_s = 60;
  CHECK(doc::render_regions(p, recs)["summary"].find("2 runs committed, 2.0 min in their commands.") !=
        std::string::npos);
  CHECK(a["runs"].find("| 2 | warps=8 batch=a\\|b | **fail** |") != std::string::npos);
}

TEST_CASE("the records outside the pools and the newest runs left out render the same document and plot") {
  auto p = demo_plan();
  auto cells = p.cells();
  std::vector<record::Record> recs;
  // 120 runs over the 4 cells; the code changes every 10 runs, and cell 0 returns to the first
  // code at the end (its pool then reaches back to runs 1-10). Run 30 is another experiment's.
  for (int run = 1; run <= 120; ++run) {
    recs.push_back(make_record(p, run, cells[static_cast<std::size_t>(run % 4)], series(100 + run % 4, 6), 0.001));
    recs.back().code.commit = std::string(40, static_cast<char>('a' + ((run - 1) / 10) % 12));
    recs.back().data.command_s = 1.5;  // 119 runs of this experiment: 178.5 s
  }
  recs.back().code.commit = std::string(40, 'a');
  recs[29].experiment = "other";
  std::vector<std::string> frames;
  const auto headers = headers_of(recs, frames);
  CHECK(headers[5].value("warps") == recs[5].cell[0].second);
  CHECK_FALSE(headers[5].value("stages"));
  auto full = doc::records_read_in_full(p, headers);
  REQUIRE(full.size() == recs.size());
  CHECK(full[3]);         // run 4 (cell 0, code 'a'): pooled with run 120
  CHECK(full[119]);       // the newest runs are listed
  CHECK_FALSE(full[20]);  // run 21: neither pooled nor among the newest 50
  CHECK_FALSE(full[29]);  // another experiment's
  std::vector<record::Record> read;
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (full[i]) read.push_back(recs[i]);
    else if (recs[i].experiment == p.experiment) ++left_out;
  }
  CHECK(read.size() < 70);
  CHECK(left_out == recs.size() - 1 - read.size());
  double left_out_s = 0;  // as a step adds them up, from the headers
  for (std::size_t i = 0; i < recs.size(); ++i)
    if (!full[i] && recs[i].experiment == p.experiment) left_out_s += headers[i].command_s;
  auto regions = doc::render_regions(p, recs, doc::RenderOptions{true});
  CHECK(regions["runs"].find("69 earlier runs") != std::string::npos);
  CHECK(regions["summary"].find("119 runs committed, 3.0 min in their commands.") != std::string::npos);
  CHECK(doc::render_regions(p, read, doc::RenderOptions{true, left_out, left_out_s}) == regions);
  CHECK(doc::plot_svg(p, read) == doc::plot_svg(p, recs));
}

TEST_CASE("the template is filled from the plan and keeps the regions") {
  auto p = demo_plan();
  std::string d = doc::render_template(doc::default_template(), p, "ab.md");
  CHECK(d.starts_with("# Occupancy\n"));
  CHECK(d.find("`t` changes by -10% (expected range -20% to -5%)") != std::string::npos);
  CHECK(d.find("- `err <= 0.01`") != std::string::npos);
  CHECK(doc::find_regions(d, "ab.md").size() == 3);
  CHECK_THROWS_AS(doc::render_template("# no regions {{title}}\n", p, "t.md"), Error);
}

TEST_CASE("escape_cell") {
  CHECK(doc::escape_cell("a|b\\c<d>&e\nf") == "a\\|b\\\\c&lt;d&gt;&amp;e f");
  // Code spans keep their text but for a row's breakers; unclosed backticks are literal.
  CHECK(doc::escape_cell("`decode<8, 16>` <x> `a|b\nc&d`") == "`decode<8, 16>` &lt;x&gt; `a\\|b c&d`");
  CHECK(doc::escape_cell("``a`b`` `<c>") == "``a`b`` `&lt;c&gt;");
  CHECK(doc::escape_cell("x ` <!-- y") == "x ` &lt;!-- y");
}

TEST_CASE("escape_line: outside a table a code span keeps its '|'") {
  CHECK(doc::escape_line("- `a|b<c>` | <x>\ny") == "- `a|b<c>` \\| &lt;x&gt; y");
  CHECK(doc::escape_line("a|b\\c<d>&e") == doc::escape_cell("a|b\\c<d>&e"));
}

TEST_CASE("three or more revisions get a step-by-step table: each against the one before it") {
  auto plan_with = [](const std::string& revisions) {
    return plan::parse_plan("experiment: path\ndoc: AB.md\nrevisions: {" + revisions +
                                "}\nbaseline: {rev: a}\naxes: {batch: [1]}\ncommand: bench\nmetrics:\n"
                                "  t: {json: t, better: lower, unit: us}\n  err: {json: err}\n",
                            "abtrack.yaml", std::filesystem::temp_directory_path());
  };
  auto p = plan_with("a: HEAD~2, b: HEAD~1, c: HEAD");
  auto cells = p.cells();
  REQUIRE(cells.size() == 3);
  std::vector<record::Record> recs{make_record(p, 1, cells[0], series(100, 20), 0.001),
                                   make_record(p, 2, cells[1], series(90, 20), 0.001),
                                   make_record(p, 3, cells[2], series(81, 20), 0.001)};
  auto s = doc::render_regions(p, recs)["summary"];
  CHECK(s.find("**Step by step:** each revision against the one before it in `revisions:` (Holm over these 2 "
               "comparisons).") != std::string::npos);
  CHECK(s.find("| a | 1 | 100.4 | start |") != std::string::npos);
  // c against b, not against the baseline a (which would be -19%).
  auto c_row = s.substr(s.find("| c | 1 |"));
  c_row = c_row.substr(0, c_row.find('\n'));
  CHECK(c_row.find("-10.0%") != std::string::npos);
  CHECK(c_row.find("better") != std::string::npos);
  // A pending middle revision leaves its neighbours without a step.
  recs.erase(recs.begin() + 1);
  s = doc::render_regions(p, recs)["summary"];
  CHECK(count(s, "| pending |") == 2);
  // An excluded revision: the next one is compared with the one before the gap, and says so.
  auto gap = plan::parse_plan(
      "experiment: path\ndoc: AB.md\nrevisions: {a: HEAD~2, b: HEAD~1, c: HEAD}\naxes: {batch: [1, 2]}\n"
      "exclude: [{rev: b, batch: 2}]\ncommand: bench\nmetrics:\n  t: {json: t, better: lower}\n  err: {json: err}\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
  std::vector<record::Record> gap_recs;
  int run = 0;
  for (const auto& c : gap.cells())
    gap_recs.push_back(make_record(gap, ++run, c,
                                   series(c.values[0] == "a"   ? 100
                                          : c.values[0] == "b" ? 90
                                                               : 81,
                                          20),
                                   0.001));
  s = doc::render_regions(gap, gap_recs)["summary"];  // no baseline: the table still comes
  CHECK(s.find("| c | 2 | 81.36 | -19.0%") != std::string::npos);
  CHECK(s.find("(vs a) |") != std::string::npos);
  CHECK(count(s, "(vs ") == 1);
  // Two revisions: the results table says it all.
  auto two = plan_with("a: HEAD~1, c: HEAD");
  std::vector<record::Record> recs2{make_record(two, 1, two.cells()[0], series(100, 20), 0.001),
                                    make_record(two, 2, two.cells()[1], series(90, 20), 0.001)};
  CHECK(doc::render_regions(two, recs2)["summary"].find("Step by step") == std::string::npos);
}

namespace {
// Revisions a, b, c of one cell each, no baseline: the step-by-step table alone compares them.
plan::Plan three_revisions() {
  return plan::parse_plan(
      "experiment: path\ndoc: AB.md\nrevisions: {a: HEAD~2, b: HEAD~1, c: HEAD}\n"
      "axes: {batch: [1]}\ncommand: bench\nmetrics:\n  t: {json: t, better: lower}\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
}
}  // namespace

TEST_CASE("a step reads in full the previous revision's runs a step-by-step row compares on its card") {
  auto p = three_revisions();
  auto cells = p.cells();
  // 120 runs over a, b, c: the first 9 on Card A (code x), the rest on Card B (code y), but for
  // run 119 (c) on Card A again: its step compares it with b's runs 1, 4 and 7 on Card A.
  std::vector<record::Record> recs;
  for (int run = 1; run <= 120; ++run) {
    const auto i = static_cast<std::size_t>(run % 3);
    recs.push_back(make_record(p, run, cells[i], series(i == 0 ? 100 : i == 1 ? 90 : 81, 6), 0.001));
    const bool a = run <= 9 || run == 119;
    recs.back().code.commit = std::string(40, a ? 'x' : 'y');
    recs.back().env.gpus.push_back(runner::Gpu{a ? "Card A" : "Card B"});
  }
  std::vector<std::string> frames;
  const auto headers = headers_of(recs, frames);
  auto full = doc::records_read_in_full(p, headers);
  CHECK(full[0]);        // run 1: b on Card A
  CHECK(full[6]);        // run 7
  CHECK_FALSE(full[2]);  // run 3: a on Card A, which no row compares
  std::vector<record::Record> read;
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (full[i]) read.push_back(recs[i]);
    else ++left_out;
  }
  auto all = doc::render_regions(p, recs, doc::RenderOptions{false});
  CHECK(all["summary"].find("Step by step") != std::string::npos);
  CHECK(doc::render_regions(p, read, doc::RenderOptions{false, left_out, 0}) == all);
}

TEST_CASE("step by step: each revision against the one before it on its own kind of GPU") {
  auto p = three_revisions();
  auto cells = p.cells();
  auto on = [&](int run, const plan::Cell& c, double t, const char* gpu) {
    auto r = make_record(p, run, c, series(t, 20), 0.001);
    r.env.gpus.push_back(runner::Gpu{gpu});
    return r;
  };
  // b was measured on both cards, latest on the H200 (twice as fast there); c only on the H100.
  std::vector<record::Record> recs{on(1, cells[0], 100, "H100"), on(2, cells[1], 90, "H100"),
                                   on(3, cells[1], 45, "H200"), on(4, cells[2], 81, "H100")};
  auto s = doc::render_regions(p, recs)["summary"];
  auto c_row = s.substr(s.find("| c | 1 |"));
  c_row = c_row.substr(0, c_row.find('\n'));
  CHECK(c_row.find("-10.0%") != std::string::npos);  // against b's H100 runs (+80% against its H200 ones)
  CHECK(c_row.find("better") != std::string::npos);
}

TEST_CASE("compare_cells: a cell is compared with the baseline's runs on its own kind of GPU") {
  auto p = demo_plan();
  auto cells = p.cells();  // warps=4 batch=a|b first: the baseline of warps=8 batch=a|b (cells[2])
  auto on = [&](int run, const plan::Cell& c, double t, const char* gpu) {
    auto r = make_record(p, run, c, {t, t, t, t, t, t}, 0.001);
    r.code.commit = std::string(40, '1');
    r.env.gpus.push_back(runner::Gpu{gpu});
    return r;
  };
  std::vector<record::Record> recs{on(1, cells[0], 100, "NVIDIA H100 80GB HBM3"), on(2, cells[0], 60, "NVIDIA H200"),
                                   on(3, cells[2], 90, "NVIDIA H100 80GB HBM3")};
  auto runs = record::cells_with_runs(p, recs);
  std::size_t with_p = 0;
  auto comps = doc::compare_cells(p, runs, with_p);
  REQUIRE(comps[2].base);
  CHECK(comps[2].base->latest()->run == 1);  // the H100 run, not the baseline's newer H200 one
  REQUIRE(comps[2].result.metrics.size() == 1);
  CHECK(comps[2].result.metrics[0].result.delta_pct < 0);  // 90 against 100, not against 60
  CHECK(doc::machine_warnings(comps).empty());
  // Without baseline runs on its card: the baseline's latest pool, across cards, warned.
  recs.erase(recs.begin());
  runs = record::cells_with_runs(p, recs);
  comps = doc::compare_cells(p, runs, with_p);
  REQUIRE(comps[2].base);
  CHECK(comps[2].base->latest()->run == 2);
  CHECK(doc::machine_warnings(comps).size() == 1);
}

TEST_CASE("a step reads in full the baseline's runs a cell is compared with on its own kind of GPU") {
  auto p = demo_plan();
  auto cells = p.cells();
  // 120 runs over the 4 cells: the first 8 on Card A (code x), the rest on Card B (code y), but
  // for run 118 (cells[2], a variant of cells[0]) on Card A again: compared with cells[0]'s runs
  // 4 and 8, neither in its latest pool nor among the newest 50.
  std::vector<record::Record> recs;
  for (int run = 1; run <= 120; ++run) {
    recs.push_back(make_record(p, run, cells[static_cast<std::size_t>(run % 4)], series(100 + run % 4, 6), 0.001));
    const bool a = run <= 8 || run == 118;
    recs.back().code.commit = std::string(40, a ? 'x' : 'y');
    recs.back().env.gpus.push_back(runner::Gpu{a ? "Card A" : "Card B"});
  }
  std::vector<std::string> frames;
  const auto headers = headers_of(recs, frames);
  CHECK(headers[3].gpus == "Card A");
  auto full = doc::records_read_in_full(p, headers);
  CHECK(full[3]);  // run 4: cells[0] on Card A
  CHECK(full[7]);  // run 8
  std::vector<record::Record> read;
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    if (full[i]) read.push_back(recs[i]);
    else ++left_out;
  }
  std::string out_runs;
  for (std::size_t i = 0; i < recs.size(); ++i)
    if (!full[i]) out_runs += std::to_string(recs[i].run) + " ";
  // Cells 1 and 3 on Card A, and cells[2] on Card B before the newest 50: in no pool shown.
  CHECK(out_runs.starts_with("1 3 5 7 10 14 "));
  CHECK(left_out == 20);
  auto all = doc::render_regions(p, recs, doc::RenderOptions{false});
  CHECK(all["summary"].find("Measured on Card A (1 cell), Card B (3 cells).") != std::string::npos);
  CHECK(all["summary"].find("different machines") == std::string::npos);
  CHECK(doc::render_regions(p, read, doc::RenderOptions{false, left_out, 0}) == all);
}
