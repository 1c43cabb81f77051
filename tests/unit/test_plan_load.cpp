#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "plan/load.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

const fs::path kRoot = fs::temp_directory_path() / "abtrack-unit-root";

plan::Plan parse(const std::string& text) {
  fs::create_directories(kRoot);
  return plan::parse_plan(text, "abtrack.yaml", kRoot);
}

// All diagnostics of a bad plan, formatted as the CLI prints them.
std::vector<std::string> errors_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    CHECK(e.code() == Exit::usage);
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(format_diagnostic(d));
    return out;
  }
  FAIL("plan was accepted: " << text);
  return {};
}

const std::string kGood = R"(experiment: occupancy
title: "Sparse MLA decode: 4 vs 8 warps"
doc: OCCUPANCY_AB.md
prediction: {metric: time_us, change: -18%, range: [-25%, -15%]}
axes:
  warps: [4, 8]
  stages: [2, 3]
  batch: [16, 64]
exclude: [{warps: 8, stages: 3}]
baseline: {warps: 4, stages: 2}
command: bench --warps {warps} --stages {stages} --batch {batch}
env: {CUDA_VISIBLE_DEVICES: "0"}
timeout: 60
repeats: 2
metrics:
  time_us: {json: samples_us, better: lower, unit: us}
  rel_err: {json: rel_err}
  tok_s: {regex: 'throughput: ([0-9.eE+-]+)', better: higher}
gates:
  - rel_err <= 6.7e-3
  - tok_s > 0
)";

}  // namespace

TEST_CASE("a complete plan loads with every field") {
  auto p = parse(kGood);
  CHECK(p.experiment == "occupancy");
  CHECK(p.title == "Sparse MLA decode: 4 vs 8 warps");
  CHECK(p.doc == "OCCUPANCY_AB.md");
  REQUIRE(p.axes.size() == 3);
  CHECK(p.axes[0].name == "warps");
  CHECK(p.axes[2].values == std::vector<std::string>{"16", "64"});
  CHECK(p.timeout_s == 60);
  CHECK(p.repeats == 2);
  REQUIRE(p.metrics.size() == 3);
  CHECK(p.metrics[0].better == plan::Better::lower);
  CHECK(p.metrics[2].source == plan::Source::regex);
  REQUIRE(p.gates.size() == 2);
  CHECK(p.gates[0].op == plan::Op::le);
  CHECK(p.gates[0].threshold == doctest::Approx(6.7e-3));
  REQUIRE(p.prediction);
  CHECK(p.prediction->change_pct == -18);
  CHECK(p.prediction->range_pct->first == -25);
  CHECK(p.sha256.size() == 64);
}

TEST_CASE("cells are the cartesian product in plan order, excluded cells left out") {
  auto p = parse(kGood);
  auto cells = p.cells();
  CHECK(cells.size() == 6);  // 8 minus warps=8 stages=3 at both batches
  CHECK(p.label(cells.front()) == "warps=4 stages=2 batch=16");
  CHECK(p.label(cells[1]) == "warps=4 stages=2 batch=64");
  CHECK(p.label(cells.back()) == "warps=8 stages=2 batch=64");
  for (const auto& c : cells) CHECK_FALSE((c.values[0] == "8" && c.values[1] == "3"));
}

TEST_CASE("the baseline cell keeps the cell's values on the other axes") {
  auto p = parse(kGood);
  auto c = p.parse_cell("warps=8,stages=2,batch=64");
  auto b = p.baseline_for(c);
  REQUIRE(b);
  CHECK(p.label(*b) == "warps=4 stages=2 batch=64");
}

TEST_CASE("--cell parsing names the problem") {
  auto p = parse(kGood);
  CHECK_THROWS_WITH_AS(p.parse_cell("warp=8,stages=2,batch=64"),
                       "--cell: unknown axis 'warp', did you mean 'warps'?\n"
                       "  hint: the axes are: warps, stages, batch; e.g. --cell warps=4,stages=2,batch=16",
                       Error);
  CHECK_THROWS_WITH_AS(p.parse_cell("8,stages=2,batch=64"),
                       "--cell: '8' is not axis=value\n  hint: '8' is a value of axis 'warps': write warps=8; "
                       "e.g. --cell warps=4,stages=2,batch=16",
                       Error);
  CHECK_THROWS_WITH_AS(
      p.parse_cell("warps=8,stages=2"),
      "--cell: no value for axis 'batch'\n  hint: name every axis, e.g. --cell warps=4,stages=2,batch=16", Error);
  CHECK_THROWS_WITH_AS(p.parse_cell("warps=8,stages=3,batch=64"),
                       "--cell: cell warps=8 stages=3 batch=64 is excluded by the plan", Error);
  CHECK_THROWS_WITH_AS(p.parse_cell("warps=8,warps=4,stages=2,batch=64"),
                       "--cell: axis 'warps' is named twice\n  hint: name each axis once", Error);
  CHECK_THROWS_WITH_AS(p.parse_cell("warps=8,stages2,batch=64"),
                       "--cell: 'stages2' is not axis=value\n  hint: write --cell warps=4,stages=2,batch=16", Error);
}

TEST_CASE("--cell takes values that hold commas") {
  auto p = parse(
      "experiment: e\ndoc: d.md\naxes: {shape: ['64,32', '128,32'], n: [1, 2]}\ncommand: x\nmetrics: {t: {json: t}}\n");
  CHECK(p.label(p.parse_cell("shape=64,32,n=2")) == "shape=64,32 n=2");
  CHECK(p.label(p.parse_cell("n=1,shape=128,32")) == "shape=128,32 n=1");
  CHECK_THROWS_WITH_AS(p.parse_cell("shape=64,n=2"),
                       "--cell: axis 'shape' has no value '64'\n  hint: its values are: 64,32, 128,32", Error);
}

TEST_CASE("unknown keys get did-you-mean with their position") {
  auto errs = errors_of("experiment: e\ndoc: d.md\naxes: {a: [1]}\ncomand: x\nmetrics: {t: {json: t}}\n");
  REQUIRE(errs.size() == 2);
  CHECK(
      errs[0] ==
      "abtrack.yaml: missing required key 'command'\n  hint: give the command that runs one cell, e.g. command: ./bench --warps {warps}");
  CHECK(errs[1] == "abtrack.yaml:4:1: unknown plan key 'comand', did you mean 'command'?");
}

TEST_CASE("every mistake of a plan is reported, in file order") {
  auto errs = errors_of(R"(experiment: ../evil
doc: ../outside.md
axes:
  warps: [4, 4]
  empty: []
baseline: {warp: 4}
command: run
timeout: -1
metrics:
  t: {json: t}
  r: {regex: '([0-9]'}
gates:
  - tt <= 3
  - t <= abc
)");
  std::string all;
  for (const auto& e : errs) all += e + "\n";
  CHECK(all.find("abtrack.yaml:1:13: experiment name '../evil' is not valid") != std::string::npos);
  CHECK(all.find("abtrack.yaml:2:6: doc '../outside.md' is outside the repository") != std::string::npos);
  CHECK(all.find("abtrack.yaml:4:14: axis 'warps' lists '4' twice") != std::string::npos);
  CHECK(all.find("abtrack.yaml:5:10: axis 'empty' has no values") != std::string::npos);
  CHECK(all.find("abtrack.yaml:6:12: baseline names unknown axis 'warp', did you mean 'warps'?") != std::string::npos);
  CHECK(all.find("abtrack.yaml:8:10: timeout must be a positive number of seconds, not -1") != std::string::npos);
  CHECK(all.find("abtrack.yaml:11:14: the regex of metric 'r' does not compile") != std::string::npos);
  CHECK(all.find("abtrack.yaml:13:5: gate 'tt <= 3' names unknown metric 'tt', did you mean 't'?") !=
        std::string::npos);
  CHECK(all.find("abtrack.yaml:14:5: gate 't <= abc': 'abc' is not a finite number") != std::string::npos);
  CHECK(errs.size() == 9);
}

TEST_CASE("duplicate keys, wrong types, syntax errors") {
  auto dup =
      errors_of("experiment: e\nexperiment: f\ndoc: d.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\n");
  REQUIRE(dup.size() == 1);
  CHECK(dup[0] == "abtrack.yaml:2:1: duplicate key 'experiment' (first given at line 1)");
  auto types =
      errors_of("experiment: e\ndoc: d.md\naxes: {a: 1}\ncommand: [x]\nmetrics: {t: {json: t}}\nrepeats: 1.5\n");
  REQUIRE(types.size() == 3);
  CHECK(types[0] == "abtrack.yaml:3:11: axis 'a' must be a list of values, e.g. a: [4, 8]");
  CHECK(
      types[1] ==
      "abtrack.yaml:4:10: command must be a single value, not a list\n  hint: an unquoted value that starts with "
      "'{' or '[' is a YAML mapping or list: quote the whole value to give it as text, e.g. command: \"{codec} < in\"");
  CHECK(types[2] == "abtrack.yaml:6:10: repeats must be a whole number from 1 to 100000, not 1.5");
  auto syntax = errors_of("experiment: e\n  doc: [\n");
  REQUIRE(syntax.size() == 1);
  CHECK(syntax[0].starts_with("abtrack.yaml:"));
  CHECK(syntax[0].find("invalid YAML") != std::string::npos);
}

TEST_CASE("baseline and exclude must name existing values") {
  auto errs = errors_of(
      "experiment: e\ndoc: d.md\naxes: {warps: [4, 8]}\nbaseline: {warps: 5}\nexclude: [{warps: 16}]\ncommand: x\nmetrics: {t: {json: t}}\n");
  REQUIRE(errs.size() == 2);
  CHECK(
      errs[0] ==
      "abtrack.yaml:4:19: baseline gives axis 'warps' the value '5', which the axis does not have\n  hint: the values of 'warps' are: 4, 8");
  CHECK(errs[1].starts_with("abtrack.yaml:5:19: exclude entry gives axis 'warps' the value '16'"));
}

TEST_CASE("a plan that excludes every cell is refused") {
  auto errs =
      errors_of("experiment: e\ndoc: d.md\naxes: {a: [1]}\nexclude: [{a: 1}]\ncommand: x\nmetrics: {t: {json: t}}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0] == "abtrack.yaml:4:10: every cell of the sweep is excluded");
}

TEST_CASE("doc paths stay inside the repository, also through symlinks") {
  fs::create_directories(kRoot);
  fs::remove(kRoot / "escape");
  fs::create_directory_symlink("/tmp", kRoot / "escape");
  auto errs = errors_of("experiment: e\ndoc: escape/x.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0] == "abtrack.yaml:2:6: doc 'escape/x.md' leads outside the repository through a symbolic link");
  auto abs = errors_of("experiment: e\ndoc: /etc/x.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\n");
  CHECK(abs[0] == "abtrack.yaml:2:6: doc must be a path relative to the repository root, not '/etc/x.md'");
  auto git = errors_of("experiment: e\ndoc: .git/x.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\n");
  CHECK(git[0] == "abtrack.yaml:2:6: doc '.git/x.md' is inside .git");
  fs::remove(kRoot / "escape");
  CHECK(parse("experiment: e\ndoc: ./docs/../AB.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\n").doc ==
        "AB.md");
}

TEST_CASE("placeholders: only axis names are replaced, values are shell-quoted") {
  auto p = parse(
      "experiment: e\ndoc: d.md\naxes: {v: [\"x; touch f\", \"$(id)\", \"it's\"]}\n"
      "command: 'echo {v} ${HOME} {\"json\": 1} {other}'\nmetrics: {t: {json: t}}\n");
  auto cells = p.cells();
  CHECK(plan::substitute(p, cells[0], p.command, true) == "echo 'x; touch f' ${HOME} {\"json\": 1} {other}");
  CHECK(plan::substitute(p, cells[1], p.command, true) == "echo '$(id)' ${HOME} {\"json\": 1} {other}");
  CHECK(plan::substitute(p, cells[2], p.command, true) == "echo 'it'\\''s' ${HOME} {\"json\": 1} {other}");
  CHECK(plan::substitute(p, cells[0], "{v}", false) == "x; touch f");
}

TEST_CASE("a placeholder that looks like a typo of an axis is a warning") {
  auto p = parse("experiment: e\ndoc: d.md\naxes: {warps: [4]}\ncommand: bench {warp}\nmetrics: {t: {json: t}}\n");
  REQUIRE(p.warnings.size() == 1);
  CHECK(format_diagnostic(p.warnings[0]) ==
        "abtrack.yaml:4:10: command has '{warp}', which is not an axis and is left as it is; did you mean '{warps}'?");
}

TEST_CASE("a prediction without a baseline is a warning: it cannot be judged") {
  auto p = parse(
      "experiment: e\ndoc: d.md\naxes: {a: [1, 2]}\ncommand: x\nmetrics: {t: {json: t}}\n"
      "prediction: {metric: t, change: -10%}\n");
  REQUIRE(p.warnings.size() == 1);
  CHECK(format_diagnostic(p.warnings[0]) ==
        "abtrack.yaml:6:13: the prediction is judged against the baseline, and the plan names none: it stays unjudged\n"
        "  hint: add baseline: {axis: value}");
  CHECK(parse("experiment: e\ndoc: d.md\naxes: {a: [1, 2]}\nbaseline: {a: 1}\ncommand: x\nmetrics: {t: {json: t}}\n"
              "prediction: {metric: t, change: -10%}\n")
            .warnings.empty());
}

TEST_CASE("control characters in the title or an axis value are plan errors") {
  auto errs = errors_of(
      "experiment: e\ndoc: d.md\ntitle: \"a\\0b\"\naxes: {a: [\"\\e[31mred\", \"x\\ty\"]}\ncommand: x\n"
      "metrics: {t: {json: t}}\n");
  REQUIRE(errs.size() == 2);
  CHECK(errs[0].find("abtrack.yaml:3:8: the title holds a control character") == 0);
  CHECK(errs[1].rfind("abtrack.yaml:4:", 0) == 0);
  CHECK(errs[1].find(": a value of axis 'a' holds a control character (an escape, a backspace)") != std::string::npos);
}

TEST_CASE("alpha and min_effect") {
  auto p = parse(
      "experiment: e\ndoc: d.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\nalpha: 0.01\nmin_effect: 1%\n");
  CHECK(p.alpha == 0.01);
  CHECK(p.min_effect_pct == 1);
  auto errs = errors_of("experiment: e\ndoc: d.md\naxes: {a: [1]}\ncommand: x\nmetrics: {t: {json: t}}\nalpha: 2\n");
  CHECK(errs[0] == "abtrack.yaml:6:8: alpha must be between 0 and 1 (e.g. 0.05), not 2");
}

TEST_CASE("{axis...} splits the value into shell-quoted words") {
  auto p = parse(
      "experiment: e\ndoc: d.md\naxes: {c: ['gzip -6', ' x;  rm -rf ~ ', '']}\n"
      "command: '{c...} < in; echo {c}'\nmetrics: {t: {json: t}}\n");
  auto cells = p.cells();
  CHECK(plan::substitute(p, cells[0], p.command, true) == "'gzip' '-6' < in; echo 'gzip -6'");
  CHECK(plan::substitute(p, cells[1], p.command, true) == "'x;' 'rm' '-rf' '~' < in; echo ' x;  rm -rf ~ '");
  CHECK(plan::substitute(p, cells[2], p.command, true) == " < in; echo ''");
  CHECK(plan::substitute(p, cells[0], "{c...}/{c}", false) == "gzip -6/gzip -6");
  CHECK(plan::substitute(p, cells[0], "{d...} {c..} {c....}", true) == "{d...} {c..} {c....}");
  CHECK(p.warnings.empty());
}

TEST_CASE("a multi-word value first in a command is a warning that suggests {axis...}") {
  auto warnings = [](const std::string& command) {
    auto p = parse("experiment: e\ndoc: d.md\naxes: {c: [gzip, 'gzip -6'], n: [1]}\ncommand: '" + command +
                   "'\nmetrics: {t: {json: t}}\n");
    std::vector<std::string> out;
    for (const auto& w : p.warnings) out.push_back(format_diagnostic(w));
    return out;
  };
  auto w = warnings("{c} < in");
  REQUIRE(w.size() == 1);
  CHECK(w[0] ==
        "abtrack.yaml:4:10: command puts {c} first in a command, and its value 'gzip -6' has a blank: it is one "
        "shell-quoted word, so the shell looks for a program named 'gzip -6'\n"
        "  hint: write {c...} to split the value into words (each still shell-quoted)");
  for (const char* first :
       {"cat in | {c}", "cd x; {c} < in", "true && {c}", "false || {c}", "( {c} )", "x=$({c})", "{c} | {c}"})
    CHECK_MESSAGE(warnings(first).size() == 1, first);
  for (const char* other : {"{c...} < in", "echo {c}", "{n} {c}", "\"{c}\" < in", "hyperfine {c}"})
    CHECK_MESSAGE(warnings(other).empty(), other);
  CHECK(warnings("{cc...}").at(0).find(
            "command has '{cc...}', which is not an axis and is left as it is; did you mean '{c...}'?") !=
        std::string::npos);
}

TEST_CASE("{axis} in name:/state: is replaced per cell, regex-escaped") {
  auto p = parse(
      "experiment: e\ndoc: d.md\naxes: {n: [64, '1.5', 'a+b']}\ncommand: x\n"
      "metrics:\n  t: {gbench: real_time, name: '^BM/{n}$'}\n  u: {nvbench: tag, state: 'N={n...} '}\n"
      "  v: {json: t, file: 'o-{n}.json'}\n");
  auto cells = p.cells();
  CHECK(plan::metrics_for(p, cells[0])[0].filter == "^BM/64$");
  CHECK(plan::metrics_for(p, cells[1])[0].filter == "^BM/1\\.5$");
  CHECK(plan::metrics_for(p, cells[2])[0].filter == "^BM/a\\+b$");
  CHECK(plan::metrics_for(p, cells[2])[1].filter == "N=a\\+b ");
  CHECK(plan::metrics_for(p, cells[2])[2].file == "o-{n}.json");
  CHECK(p.metrics[0].filter == "^BM/{n}$");
  CHECK(plan::substitute_regex(p, cells[0], "\\^$.|?*+()[]{}/{n}") == "\\^$.|?*+()[]{}/64");
  CHECK(plan::substitute_regex(p, cells[2], "{n}") == "a\\+b");

  auto errs = errors_of(
      "experiment: e\ndoc: d.md\naxes: {size: [1]}\ncommand: x\n"
      "metrics: {t: {gbench: real_time, name: '^BM/{sise}$'}}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].find("abtrack.yaml:5:40: the name regex of metric 't' does not compile") == 0);
  CHECK(errs[0].find("hint: '{sise}' is not an axis, did you mean '{size}'? {axis} is replaced by the cell's value") !=
        std::string::npos);
}

TEST_CASE("a YAML syntax error in an unquoted value gets a hint to quote it") {
  auto errs =
      errors_of("experiment: e\ndoc: d.md\naxes: {n: [1]}\ncommand: echo '{\"t\": 1}'\nmetrics: {t: {json: t}}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].find("abtrack.yaml:4:") == 0);
  CHECK(errs[0].find("invalid YAML: ") != std::string::npos);
  CHECK(errs[0].find(
            "\n  hint: the value of 'command' holds ': ', '{' or '[', which YAML reads as structure: quote the whole "
            "value, e.g. command: \"echo '{\\\"t\\\": 1}'\" (or in single quotes, each ' doubled), or write it as a "
            "block scalar: command: | and the value on the next line, indented") != std::string::npos);
  // The quoted value the hint gives loads.
  CHECK(parse("experiment: e\ndoc: d.md\naxes: {n: [1]}\ncommand: \"echo '{\\\"t\\\": 1}'\"\nmetrics: {t: {json: t}}\n")
            .command == "echo '{\"t\": 1}'");
  // A broken flow mapping is not a value to quote.
  auto flow = errors_of("experiment: e\ndoc: d.md\naxes: {n: [1, 2}\ncommand: x\nmetrics: {t: {json: t}}\n");
  REQUIRE(flow.size() == 1);
  CHECK(flow[0].find("hint:") == std::string::npos);
}

TEST_CASE("warmup: the plan's count, a metric's own, and where each was given") {
  const std::string base = "experiment: e\ndoc: d.md\naxes: {a: [1]}\ncommand: x\n";
  auto none = parse(base + "metrics: {t: {json: t}}\n");
  CHECK(none.warmup == 0);
  CHECK(none.metrics[0].warmup == 0);
  auto p =
      parse(base + "warmup: 3\nmetrics:\n  t: {json: t}\n  err: {json: err, warmup: 0}\n  u: {json: u, warmup: 1}\n");
  CHECK(p.warmup == 3);
  REQUIRE(p.metrics.size() == 3);
  CHECK(p.metrics[0].warmup == 3);
  CHECK(format_diagnostic(Diagnostic{p.metrics[0].warmup_where, "x", ""}).starts_with("abtrack.yaml:5:9:"));
  CHECK(p.metrics[1].warmup == 0);
  CHECK(p.metrics[2].warmup == 1);
  CHECK(format_diagnostic(Diagnostic{p.metrics[2].warmup_where, "x", ""}).starts_with("abtrack.yaml:9:24:"));
  // What warm-up drops is part of how a cell is run: other counts never pool.
  auto q =
      parse(base + "warmup: 2\nmetrics:\n  t: {json: t}\n  err: {json: err, warmup: 0}\n  u: {json: u, warmup: 1}\n");
  CHECK(plan::recipe(p, p.cells()[0]) != plan::recipe(q, q.cells()[0]));
  auto zero = parse(base + "warmup: 0\nmetrics: {t: {json: t}}\n");
  CHECK(plan::recipe(zero, zero.cells()[0]) == plan::recipe(none, none.cells()[0]));  // no warm-up: recipes as before
}

TEST_CASE("warmup must be a whole number of samples, 0 or more") {
  const std::string base = "experiment: e\ndoc: d.md\naxes: {a: [1]}\ncommand: x\n";
  for (const char* bad : {"-1", "1.5", "two", "[1]"}) {
    auto errs = errors_of(base + "warmup: " + bad + "\nmetrics: {t: {json: t}}\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].starts_with("abtrack.yaml:5:9: "));
    CHECK(errs[0].find("warmup must be") != std::string::npos);
  }
  auto errs = errors_of(base + "metrics: {t: {json: t, warmup: -2}}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].find("abtrack.yaml:5:") == 0);
  CHECK(errs[0].find("metric 't': warmup must be a whole number of samples, 0 or more, not -2") != std::string::npos);
  auto typo = errors_of(base + "warmpu: 2\nmetrics: {t: {json: t}}\n");
  REQUIRE(typo.size() == 1);
  CHECK(typo[0].find("did you mean 'warmup'") != std::string::npos);
}
