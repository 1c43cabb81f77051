// `abtrack help [CMD]` and the command table.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace abtrack::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"init", "init", "validate the plan, create the A/B document, commit plan and document",
       "Validates the plan (every mistake is reported, exit 2), creates the document from the template when\n"
       "it does not exist (the plan's `template:` or the built-in one), fills its regions, and commits the\n"
       "plan and the document in one commit. An existing document is kept; it must contain at least one\n"
       "region (<!-- abtrack:begin results --> ... <!-- abtrack:end results -->).",
       cmd_init},
      {"step", "step [--cell k=v,...] [--record FILE] [--metric NAME=VALUE[,VALUE...]]... [--no-commit]",
       "one run of the first pending cell (or the given one), one commit",
       "Runs the plan's setup (if any) and then the command of one cell `repeats` times, reads the metrics\n"
       "from stdout (the first `warmup:` samples of each invocation kept apart from the analysis; an\n"
       "invocation that gives no more is an error, exit 2, nothing recorded; for ncu: metrics, from one\n"
       "more invocation under Nsight Compute after those: ncu is $ABTRACK_NCU, else ncu on PATH or in\n"
       "/usr/local/cuda/bin; cuobjdump, for the facts of CUDA artifacts, likewise with $ABTRACK_CUOBJDUMP),\n"
       "evaluates the gates (on every sample), writes runs/<experiment>/<NNNN>.json, re-renders the\n"
       "document's regions and commits both in one commit on HEAD's branch. Without --cell it takes the\n"
       "first cell that has no run yet.\n"
       "  --cell k=v,...      run this cell (every axis named), even if it has runs already\n"
       "  --record FILE       do not run anything: read the metrics from FILE as if it were the command's stdout\n"
       "  --metric NAME=V     do not run anything: record these samples (repeatable; V may be a,b,c), in\n"
       "                      the metric's unit: a plan's scale: is not applied to them; every metric needs a\n"
       "                      value (from --metric, or from --record's file for metrics read from stdout)\n"
       "                      but an ncu: metric, which is left out unless given\n"
       "  --no-commit         a dry run: run and print the result line (\"dry run ...\", compared with\n"
       "                      HEAD's records) without committing or journaling anything\n"
       "An invalid run prints the last lines of its command's stderr under the result line.\n"
       "Refuses (exit 3) before running when the document or its plot has uncommitted changes outside\n"
       "what abtrack writes (the regions, the plot: `abtrack render`'s output is rewritten); an edited\n"
       "record is left alone and never committed (`abtrack verify` reports it).\n"
       "Exit 0 when the run passes, 1 when it fails a gate or is invalid (it is still committed).",
       cmd_step},
      {"run",
       "run [--rounds R|auto] [--max-rounds N] [--budget D] [--seed S] [--all] [--retry] [--keep-going] [--dry-run] [--jobs N] [--detach] [--rev NAME=REV]... [--rebuild]",
       "step through every pending cell, one commit each",
       "Runs the setup once, then every cell without a run or whose latest run is invalid, in plan order,\n"
       "committing each run as soon as it is measured. Interrupting it (Ctrl-C) stops the running command's\n"
       "process group; committed runs stay, the interrupted run is not recorded, and the exit code is 130.\n"
       "When the first runs all end invalid alike (2 with exit status 126 or 127, 3 with one reason), it\n"
       "stops there with an error (exit 1); what it measured stays committed.\n"
       "  --rounds R   run the cells R times (default: the plan's rounds:), each round in a freshly\n"
       "               shuffled order, so drift and heat hit every arm alike; the seed and round are\n"
       "               recorded, and each cell is compared with its baseline paired by round; ncu:\n"
       "               metrics are profiled once per cell, not every round (every round when a gate,\n"
       "               better: or the prediction uses one)\n"
       "  --rounds auto  rounds of the cells still undecided until every comparison with a baseline is\n"
       "               decided (better, worse or equivalent), judged after each round with anytime-valid\n"
       "               intervals (docs/statistics.md); needs a baseline and a metric with better:;\n"
       "               a batch stopped undecided before max_rounds (budget, interrupt) is continued\n"
       "               by the next run when no cell is pending, on the kind of GPU and the code it\n"
       "               ran on (--all starts a new one)\n"
       "  --max-rounds N  with rounds: auto, the most rounds (default: the plan's max_rounds:, or 20)\n"
       "  --budget D   with rounds: auto, the wall time it may spend (90s, 30m, 2h, 1h30m)\n"
       "  --seed S     the shuffle's seed (default: random, printed and recorded)\n"
       "  --all        every cell of the plan, not only the pending ones\n"
       "  --retry      also the cells whose latest run failed a gate\n"
       "  --keep-going do not stop when the first runs end invalid alike\n"
       "  --dry-run    run and print the result lines (compared with HEAD's records); commit nothing;\n"
       "               first, from the recorded pools, the rounds a fixed and an auto design need\n"
       "  --rev NAME=REV  with revisions: in the plan, measure revision NAME at REV (a branch, tag, commit,\n"
       "               HEAD~3 or WORKTREE) for this invocation, e.g. in CI: --rev base=origin/main; the\n"
       "               groups it names are measured even when that code was measured before\n"
       "  --rebuild    with revisions: build every revision's tree again, although a build with this\n"
       "               command succeeded there (a harness or library outside the repository changed)\n"
       "  --jobs N     run up to N cells at once (default: the plan's jobs:, or one per GPU in gpus:); each\n"
       "               running cell gets its own GPU from gpus: through CUDA_VISIBLE_DEVICES; commits stay\n"
       "               one at a time, in plan order\n"
       "  --detach     with executor: slurm, return after submitting the job array (prints the job id);\n"
       "               `abtrack collect` commits the results later\n"
       "With revisions: the plan's revisions are resolved against your history (abtrack's own commits\n"
       "passed over: HEAD~1 stays put as runs are committed), each is checked out as a linked work tree\n"
       "of its commit under .git/abtrack/trees/ and built there once (build:), and every group of cells\n"
       "that differ only in rev and lacks a valid run on its revision's current code and command is\n"
       "measured for rounds: rounds (--rounds; default 10), its revisions back to back in an order that\n"
       "alternates between rounds; the document compares them paired by round. --jobs above 1 and\n"
       "--detach do not apply then.\n"
       "A cell's runs on the same code, command and kind of GPU pool their samples in the document; with\n"
       "nothing pending on a kind of GPU the latest runs were not measured on, it says so (--all measures\n"
       "every cell here).\n"
       "Exit 0 when every run passes, 1 when any failed or was invalid.",
       cmd_run},
      {"status", "status [--json]", "every cell with its pool's outcome, or pending",
       "Lists every cell of the plan with the outcome of its pool (its committed runs on the code and GPU\n"
       "kind of its latest run: fail when any run of the pool failed a gate, else pass when one passed, else invalid;\n"
       "an invalid latest run is marked \"(latest run invalid)\"), the latest run and the pooled medians of\n"
       "its metrics, or `pending`. --json prints an object with counts and one entry per cell (with the\n"
       "latest run's outcome as latest).",
       cmd_status},
      {"log", "log [--json] [--all]", "the runs, newest first, read from git history",
       "Walks the history of HEAD (through libgit2) and lists the commits with an Abtrack-Run trailer of\n"
       "this plan's experiment (--all: of every experiment): commit, run, date, outcome, cell and `code ID`,\n"
       "the code the run measured (its Abtrack-Code trailer, ids shortened to 12 digits: a commit, with\n"
       "\" +snapshot ID\" for a snapshot of the work tree or \" +dirty\" for code no snapshot kept; with\n"
       "revisions: the cell's rev=NAME and the commit that revision resolved to); a run taken back is\n"
       "marked [dropped], and its drop (Abtrack-Dropped) is listed with outcome dropped. --json: the\n"
       "same, the trailer in full.",
       cmd_log},
      {"render", "render", "rewrite the document's regions and the plot from the committed records (no commit)",
       "Re-renders the summary, results and runs regions from the records committed on HEAD and writes the\n"
       "document atomically; redraws the plot beside it (unless the plan says plot: false), byte for byte\n"
       "what a step would commit. Text outside the regions is kept byte for byte. Nothing is committed.",
       cmd_render},
      {"verify", "verify",
       "exit 0 when the document's regions and its plot equal a fresh render and every record is committed",
       "Renders the regions from the committed records and compares them with the document in the work\n"
       "tree, and the plot with a fresh plot of the same records; also checks that runs/<experiment>/ has\n"
       "nothing uncommitted. Exit 1 with a diff otherwise (`abtrack render` redraws both).",
       cmd_verify},
      {"compare",
       "compare RUN_A RUN_B [--metric M] [--json] | compare --samples FILE_A FILE_B [--better lower|higher] [--alpha A] [--min-effect P%]",
       "statistics between two runs, or two files of samples",
       "Compares B against A: medians with their 95% CIs, the two-sided Mann–Whitney U test, the\n"
       "Hodges–Lehmann change with its CI, and a verdict: better, worse, same (~), equivalent or\n"
       "inconclusive (docs/statistics.md). Each arm one value (a size, a count): the exact change,\n"
       "marked (exact), with no p-value; a sample <= 0: the absolute change B - A, marked (abs). Runs are\n"
       "run numbers of the current plan's experiment; with --samples the files hold one number per line.\n"
       "--json prints median_a, median_b, ci_a, ci_b, p_value, delta_pct, delta_ci_pct, verdict, exact,\n"
       "delta_abs, delta_abs_ci, method, n_a, n_b, notes.",
       cmd_compare},
      {"check", "check [--format text|md] [--history] [--min-effect PCT]",
       "the CI gate: exit 1 when a cell got worse, failed a gate or is invalid",
       "Compares every cell with its baseline cell exactly as the document's results table does (pooled, or\n"
       "paired by round for cells measured in the same rounds; p-values Holm-adjusted across the experiment)\n"
       "and prints one row per cell (and compared metric): n, the baseline's median, the median, the change\n"
       "with its CI, the verdict, p and the outcome, then \"N worse, M failed gates, K invalid\". Pending\n"
       "cells are listed but do not fail the check. As the document, it warns (⚠, without failing) of a\n"
       "cell compared with a baseline measured on another machine (host, driver or kind of GPU) or, but\n"
       "with revisions: or --history, on other code. Nothing is written.\n"
       "  --format F   text (aligned columns, the default) or md (GitHub-flavoured markdown: a title, the\n"
       "               table and the summary, ready to paste into a pull-request comment)\n"
       "  --history    no baseline: each cell's newest pool (its runs on the code of its latest run) against\n"
       "               its previous code's pool (its most recent earlier runs on one other code, on the\n"
       "               same kind of GPU), Holm across the cells compared; a cell with no earlier code\n"
       "               there is listed as \"no earlier code\"\n"
       "  --min-effect PCT  the plan's min_effect for this check only, e.g. 2%: changes within ±PCT count\n"
       "               as the same; for --history across machines or days, whose offsets pairing cannot cancel\n"
       "Exit 0 when nothing below holds; 1 when a cell is worse beyond min_effect, a cell's pool failed a\n"
       "gate, or a cell's latest run is invalid; 2 usage or plan error; 3 environment error (not a git\n"
       "repository, a record that cannot be read); 4 when nothing was compared and nothing failed: no\n"
       "cell had a baseline run (or, --history, earlier code) to be compared with, or no cell has a run\n"
       "(a plan without a baseline checks only gates and invalid runs); a warning on stderr says which.",
       cmd_check},
      {"collect", "collect [--wait]", "commit the runs of finished Slurm tasks",
       "Reads the result files of the experiment's outstanding Slurm job arrays (executor: slurm) and\n"
       "commits each finished task's run once: metrics and gates are read here, as for a local run.\n"
       "Cancelled, failed and timed-out tasks become invalid runs with the reason. Safe to run twice at\n"
       "once. Without --wait it returns at once, saying how many tasks are still pending or running.\n"
       "  --wait   poll (squeue) until every task has ended and is committed\n"
       "Exit 0 when every committed run passes, 1 when any failed or was invalid.",
       cmd_collect},
      {"cancel", "cancel", "scancel the experiment's outstanding Slurm job arrays",
       "Cancels (scancel) every job array of the experiment that still has uncommitted tasks, then\n"
       "commits the cancelled tasks as invalid runs (\"slurm task J_I was cancelled\") once Slurm has\n"
       "ended them; finished tasks are committed with their results.",
       cmd_cancel},
      {"clean", "clean [--keep N]", "remove the work trees of revisions the plan no longer names",
       "A plan with revisions: checks out each revision it measures as a linked work tree under\n"
       ".git/abtrack/trees/<key>/ (one per code tree and build command) and builds it there. clean\n"
       "removes those trees, their builds and build logs, and their registrations in .git/worktrees/,\n"
       "except the trees the plan's revisions name now, the N most recently used (--keep, default 8) and\n"
       "those a running abtrack uses (listed as kept), so a long bisect does not fill the disk. What a\n"
       "killed abtrack left half-written goes too. The work tree, the index and the history are not touched.",
       cmd_clean},
      {"bisect",
       "bisect --good REV --bad REV [--cell k=v,...] [--metric M] [--max-rounds N] [--budget D] [--min-effect PCT] [--seed N]",
       "find the first commit that made a cell worse",
       "Needs a plan with build: (or none), command and the cell (revisions: are not needed: a plan\n"
       "with them keeps its baseline revision as good). Step 0 measures bad against good, round after\n"
       "round, until bad is shown worse beyond min_effect (an anytime-valid interval, so looking after\n"
       "every round is sound); not worse, or not shown worse within --max-rounds or --budget, it stops\n"
       "with exit 1 and says how much it measured. Then a binary search over your first-parent commits\n"
       "from good to bad (abtrack's run commits, and any commit changing only its data, are left out; a\n"
       "--good or --bad naming one means your commit below it, and ~N counts your commits only): each\n"
       "step builds the middle commit (one that does not build is skipped) and measures it against good\n"
       "AND bad in the same rounds, adding rounds until the interval of where it lies (theta: 0 good,\n"
       "1 bad) is clearly on one side of the midpoint: good or bad. A step that runs out of rounds ends\n"
       "the bisect undecided between the commits still bracketing the change (exit 1); nothing is ever\n"
       "called good for lack of significance. Each step is judged at alpha / ceil(log2(commits + 1)).\n"
       "The measurements are not runs of the plan (the document and check are unchanged): each step is\n"
       "one commit of runs/<experiment>/bisect/<id>/log (for people: git show HEAD:<that path>) and\n"
       "bisect.json (every sample). Run again with the same arguments, an interrupted bisect resumes\n"
       "after its last committed step (on the kind of GPU it was measured on), and a finished one prints\n"
       "its result.\n"
       "  --good REV, --bad REV   any git revision; good must be a first-parent ancestor of bad\n"
       "  --cell k=v,...          the cell, a value for every axis but rev (not needed when the plan\n"
       "                          has one cell)\n"
       "  --metric M              the metric judged (default: the first with better:)\n"
       "  --max-rounds N          the most rounds a step measures (default 128, at least 2; --rounds\n"
       "                          is an old name for it)\n"
       "  --budget D              the wall time this command may take: 90s, 30m, 2h, 1h30m\n"
       "  --min-effect PCT        how much worse bad must be than good (default: the plan's min_effect)\n"
       "  --seed N                the seed of the rounds' order\n"
       "Exit 0: found; 1: bad is not (shown) worse, a step undecided, or skips leave a range (printed);\n"
       "2: usage; 130: interrupted (run it again to resume).",
       cmd_bisect},
      {"__task", "__task DIR INDEX", "(internal) run one Slurm task on its node",
       "Run by the job script abtrack submits: runs task INDEX of DIR/manifest.json and writes\n"
       "DIR/result-INDEX.json.",
       cmd_task},
      {"export", "export --format csv|md|json [--cells]", "the committed runs (or cells) as CSV, markdown or JSON",
       "Prints the experiment's committed runs on stdout, one row per run (ascending): run, the cell's\n"
       "values, outcome, each metric's median, for each compared metric (with a baseline) its change in\n"
       "percent (delta_pct; delta_abs for a metric with a sample <= 0) and verdict (\"better (exact)\" for\n"
       "an exact change) as the run recorded them, the reason of a failed or invalid run, and the code the\n"
       "run measured (code: the commit, 12 digits, with \" +snapshot ID\" for a snapshot of the work tree\n"
       "or \" +dirty\" for code no snapshot kept; with revisions: the commit the cell's rev resolved to).\n"
       "  --format F   csv (RFC 4180), md (a markdown table: numbers rounded as the document rounds\n"
       "               them, units in the headers) or json (an array of objects; null for empty)\n"
       "  --cells      one row per cell of the plan instead: values, n, outcome (or pending), the pooled\n"
       "               medians, change and verdict as the document shows them, the pooled runs and\n"
       "               their code\n"
       "A column is named after its axis or metric; one named like another column (an axis `n`, `run`,\n"
       "`outcome`) gets its kind after its name: `n (axis)`.",
       cmd_export},
      {"drop", "drop RUN [--reason TEXT]", "take back a run: one commit that removes its record",
       "Removes runs/<experiment>/<RUN>.json in one commit (\"abtrack(<experiment>): drop run RUN\", trailers\n"
       "Abtrack-Experiment and Abtrack-Dropped), re-renders the document and the plot without it, and\n"
       "leaves runs/<experiment>/<RUN>.dropped (the run's cell, outcome and measurement id, when and why)\n"
       "so that its number is never used again: the next run is numbered past every run there ever was.\n"
       "  --reason TEXT   why, kept in the commit message and the .dropped file\n"
       "Refuses (exit 3) when the document or its plot has uncommitted changes, as step does.",
       cmd_drop},
      {"help", "help [COMMAND]", "this text, or one command's", "Prints the command list, or one command's help.",
       cmd_help},
  };
  return table;
}

int cmd_help(const Args& args) {
  if (args.rest.size() > 1)
    throw Error(Exit::usage, fmt::format("help takes one command, not '{}'", args.rest[1]), "abtrack help COMMAND");
  if (!args.rest.empty()) {
    for (const auto& c : commands()) {
      if (c.name != args.rest.front()) continue;
      fmt::print("usage: abtrack [-p PLAN] [-q] [-v] {}\n\n{}\n\n{}\n", c.usage, c.summary, c.help);
      return 0;
    }
    std::vector<std::string> names;
    for (const auto& c : commands()) names.emplace_back(c.name);
    throw Error(Exit::usage,
                fmt::format("no command '{}'{}", args.rest.front(), util::suggestion_suffix(args.rest.front(), names)),
                "abtrack help lists the commands");
  }
  fmt::print(
      "abtrack {} — GPU-kernel A/B experiments as a git history\n\n"
      "usage: abtrack [-p PLAN] [-q] [-v] COMMAND [ARGS]\n\n"
      "commands:\n",
      version());
  for (const auto& c : commands())
    if (!c.name.starts_with("__")) fmt::print("  {:<9} {}\n", c.name, c.summary);
  fmt::print(
      "\noptions:\n"
      "  -p, --plan FILE  the plan, a path from the current directory (default: the nearest\n"
      "                   abtrack.yaml from the current directory up to the repository root)\n"
      "  -q, --quiet      no progress lines on stderr\n"
      "  -v, --verbose    stream the commands' output to stderr as it comes (still captured)\n"
      "  --version        print the version\n\n"
      "exit codes: 0 ok, 1 a run failed or was invalid (still committed), 2 usage or plan error,\n"
      "3 environment error (not a git repository, cannot commit, uncommitted edits), 4 `check` compared\n"
      "nothing, 130 interrupted.\n"
      "`abtrack help COMMAND` describes one command.\n");
  return 0;
}

}  // namespace abtrack::cli
