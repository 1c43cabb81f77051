#!/usr/bin/env bash
# abtrack's bookkeeping cost, measured side by side with the git CLI doing the same work
# (docs/PERFORMANCE.md). Prints two markdown tables.
#
#   scripts/bench.sh [build-dir]        (default build/; needs git, python3 and hyperfine)
#   BENCH_ROUNDS=N scripts/bench.sh     (rounds of the step measurement; default 60)
#   BENCH_KEEP=1 scripts/bench.sh       (keep the temporary folder, e.g. to read the document)
#   BENCH_PARTS="step read watch"       (the parts to run, below; default all three)
#   BENCH_OTHER=ABTRACK                 (another abtrack binary, measured beside this one in parts 1, 2)
#   BENCH_NVML=LIB                      (the watcher's NVML for part 3; default the fake one,
#                                        build/tests/libfakenvml.so; libnvidia-ml.so.1 on a GPU host)
#
# 1. One bookkeeping step: `abtrack step` on a trivial command against a shell script doing the
#    same with the git CLI (the newest record copied into runs/bench/ as the next run, a line
#    appended to the experiment's document, `git add` both, `git commit`), in repositories with
#    10 and 1000 runs of history, with the plot and without (`plot: false`), and with 10,000 runs
#    (~10,000 files) with the plot. The measurement is itself an abtrack experiment, in a
#    repository of its own beside the measured ones: cells tool x history x plot, baseline
#    tool=gitcli, run with `abtrack run --rounds N` (each round runs every cell once, in a
#    shuffled order), so every abtrack cell is compared with the git CLI in the same repository
#    paired by round (docs/statistics.md). Each run times one step and puts the measured
#    repository back to its history afterwards (untimed), so "10 runs" stays 10. BENCH_OTHER
#    adds a third tool, `other`: the same step by another build of abtrack (say, the one before
#    a change) in the same rounds. Printed: `abtrack check --format md` of that experiment, the
#    medians with their ratios, the growth from 10 to 1000 runs (ratios of the medians), and
#    with BENCH_OTHER this build against the other paired by round.
# 2. status, log, render, verify at 1000 and 10,000 runs (hyperfine), and with BENCH_OTHER the
#    same by the other build.
# 3. The watcher's cost: `abtrack step` of a command that does ~10 ms of work, 3 invocations
#    (`repeats: 3`), with the watcher sampling BENCH_NVML and without NVML (ABTRACK_NVML_LIBRARY
#    naming no file: the watcher finds none and samples nothing), as an abtrack experiment of its
#    own paired by round: the step's wall time, the first invocation's duration as the record has
#    it (NVML is loaded while it runs), the later two's, and their work as the command times it.
#    Printed: the medians side by side, and the paired change (as `check` gives it, in ms and in
#    % of 10 ms).
#
# The repositories go under $TMPDIR (mktemp -d), so TMPDIR picks the file system measured; it is
# printed first. On ext4 without a journal, creating files gets slower for a few minutes after
# many were deleted, and this script deletes ~30,000 when it ends: run it again only after a few
# idle minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
abtrack="$build/abtrack"
rounds=${BENCH_ROUNDS:-60}
parts=" ${BENCH_PARTS:-step read watch} "
part() { [[ $parts == *" $1 "* ]]; }
nvml=${BENCH_NVML:-$build/tests/libfakenvml.so}
other=${BENCH_OTHER:-}
[ -x "$abtrack" ] || { echo "bench: build abtrack first ($abtrack)" >&2; exit 2; }
if [ -n "$other" ]; then
  other=$(cd "$(dirname "$other")" && pwd)/$(basename "$other")
  [ -x "$other" ] || { echo "bench: BENCH_OTHER is not an executable ($other)" >&2; exit 2; }
fi
if part read; then
  command -v hyperfine >/dev/null || { echo "bench: hyperfine is missing (apt-get install hyperfine)" >&2; exit 2; }
fi
if part watch && [[ $nvml == */* ]] && [ ! -f "$nvml" ]; then
  echo "bench: the fake NVML is not built ($nvml): cmake --build build --target fakenvml" >&2; exit 2
fi
work=$(mktemp -d)
if [ -n "${BENCH_KEEP:-}" ]; then trap 'echo "bench: kept $work" >&2' EXIT; else trap 'rm -rf "$work"' EXIT; fi
out="$work/results"
mkdir -p "$out"
# The file system the repositories are on, and for ext4 whether it has a journal (jbd2 lists the
# devices with one).
fs_type=$(stat -f -c %T "$work")
dev=$(df --output=source "$work" | tail -n 1)
journal=""
if [ "$fs_type" = ext2/ext3 ]; then  # stat's name for ext4 too
  journal="without a journal"
  ls /proc/fs/jbd2 2>/dev/null | grep -q "^$(basename "$dev")-" && journal="with a journal"
fi
echo "bench: repositories in $work: $fs_type $journal on $dev; $rounds rounds; parts:$parts"

history() {  # history DIR N: an experiment with N runs, its document rendered and committed
  python3 "$here/bench/make_history.py" "$1" "$2"
  (cd "$1" && "$abtrack" -q render && git add -A && git commit -qm "render" && "$abtrack" -q status >/dev/null)
}

# The git CLI doing what one step does: a record as large as the step's, written where the step
# writes records (runs/bench/, a folder of 10 or 1000 files), a line appended to the experiment's
# document, add, commit.
cat >"$work/git-step.sh" <<'SH'
#!/bin/sh
set -e
last=$(ls runs/bench | tail -n 1)
n=$(ls runs/bench | wc -l)
n=$((n + 1))
f=$(printf 'runs/bench/%04d.json' "$n")
sed "s/\"run\": [0-9]*/\"run\": $n/" "runs/bench/$last" >"$f"
printf '| %d | variant=a batch=1 | pass |\n' "$n" >>BENCH_AB.md
git add "$f" BENCH_AB.md
git commit -q -m "run $n" -m "Abtrack-Run: $n"
SH
# One timed step of TOOL in the repository PLOT-HISTORY, printed as {"ms": T}; the repository is
# reset to its history (refs/bench/base) afterwards, untimed. bash's $EPOCHREALTIME reads the
# clock without starting a process, so the interval holds the step's process and nothing else.
cat >"$work/time-step.sh" <<'SH'
#!/usr/bin/env bash
set -eu
cd "$(dirname "$0")/$3-$2"
case $1 in
  abtrack) step=("$ABTRACK" -q step --cell variant=a,batch=1) ;;
  other) step=("$OTHER" -q step --cell variant=a,batch=1) ;;
  gitcli) step=(../git-step.sh) ;;
  *) echo "time-step.sh: unknown tool $1" >&2; exit 2 ;;
esac
s=$EPOCHREALTIME
"${step[@]}" >/dev/null
e=$EPOCHREALTIME
git reset -q --hard refs/bench/base
us=$(( ${e//[.,]/} - ${s//[.,]/} ))
printf '{"ms": %d.%03d}\n' $((us / 1000)) $((us % 1000))
SH
chmod +x "$work/git-step.sh" "$work/time-step.sh"

if part step; then
tools="gitcli abtrack${other:+ other}"
# The measured repositories: svg-N with the plot, none-N with `plot: false` (not at 10,000 runs).
for n in 10 1000 10000; do
  history "$work/svg-$n" "$n"
  git -C "$work/svg-$n" update-ref refs/bench/base HEAD
  [ "$n" = 10000 ] && continue
  history "$work/none-$n" "$n"
  (cd "$work/none-$n" && printf 'plot: false\n' >>abtrack.yaml && git commit -qam "plan: plot: false")
  git -C "$work/none-$n" update-ref refs/bench/base HEAD
done
# Three untimed steps of every cell before the first round (caches, page cache).
cat >"$work/warm-up.sh" <<SH
#!/bin/sh
for i in 1 2 3; do for t in $tools; do for r in svg-10 none-10 svg-1000 none-1000 svg-10000; do
  "$work/time-step.sh" "\$t" "\${r#*-}" "\${r%-*}" >/dev/null || exit 1
done; done; done
SH
chmod +x "$work/warm-up.sh"

# The measuring experiment, in a repository of its own.
git init -q -b main "$work/measure"
git -C "$work/measure" config user.name bench && git -C "$work/measure" config user.email bench@localhost
cat >"$work/measure/abtrack.yaml" <<YAML
experiment: step
doc: STEP.md
title: "One bookkeeping step: abtrack against the git CLI"
what: >-
  abtrack step on a trivial command, and a shell script doing the same bookkeeping with the git
  CLI, in repositories of 10 and 1000 runs, with the plot and without, and of 10,000 runs.
why: >-
  A step's bookkeeping should cost little beside the git CLI's own commit of the same files, and
  grow little with the history.
how: >-
  Each run times one step in a measured repository (a repository of its own, beside this one)
  and resets that repository to its history afterwards, untimed. abtrack run --rounds runs every
  cell once per round in a shuffled order, so each abtrack cell is compared with the git CLI
  paired by round.
axes:
  tool: [${tools// /, }]
  history: [10, 1000, 10000]
  plot: [svg, none]
exclude: [{history: 10000, plot: none}]
baseline: {tool: gitcli}
setup: $work/warm-up.sh
env: {ABTRACK: $abtrack, OTHER: "$other"}
command: $work/time-step.sh {tool} {history} {plot}
metrics:
  ms: {json: ms, better: lower, unit: ms}
YAML
(cd "$work/measure" && "$abtrack" -q init \
  && "$abtrack" -q run --rounds "$rounds" >/dev/null)

echo
(cd "$work/measure" && "$abtrack" -q check --format md) || true
(cd "$work/measure" && "$abtrack" -q export --cells --format json) >"$out/cells.json"
python3 - "$out/cells.json" $tools <<'PY'
import json, sys
rows = {(r["tool"], str(r["history"]), r["plot"]): r["ms"] for r in json.load(open(sys.argv[1]))}
tools = sys.argv[2:]
arms = [("10", "svg"), ("10", "none"), ("1000", "svg"), ("1000", "none"), ("10000", "svg")]
def row(name, values):
    print(f"| {name} | " + " | ".join(values) + " |")
print()
row("median step", [f"{h} runs{'' if p == 'svg' else ', plot: false'}" for h, p in arms])
print("| --- |" + " ---: |" * len(arms))
for tool in tools:
    row(tool, [f"{rows[(tool, h, p)]:.1f} ms" for h, p in arms])
for a, b in [(t, "gitcli") for t in tools[1:]] + ([("abtrack", "other")] if "other" in tools else []):
    row(f"{a} ÷ {b}", [f"{rows[(a, h, p)] / rows[(b, h, p)]:.2f}x" for h, p in arms])
print("\n| growth, 1000 runs / 10 runs (ratio of the medians) | plot | plot: false |\n| --- | ---: | ---: |")
for tool in tools:
    row(tool, [f"{rows[(tool, '1000', p)] / rows[(tool, '10', p)]:.2f}x" for p in ("svg", "none")])
PY
if [ -n "$other" ]; then
  # abtrack against the other build paired by round: each round runs every cell once, so a
  # cell's n-th runs of the two builds share a round. The median of the per-round ratios, with
  # the distribution-free 95% interval of a median (order statistics of the binomial).
  (cd "$work/measure" && "$abtrack" -q export --format json) >"$out/runs.json"
  python3 - "$out/runs.json" <<'PY'
import json, math, sys
runs = {}
for r in json.load(open(sys.argv[1])):
    runs.setdefault((r["tool"], str(r["history"]), r["plot"]), []).append(r["ms"])
arms = [("10", "svg"), ("10", "none"), ("1000", "svg"), ("1000", "none"), ("10000", "svg")]
print("\n| abtrack ÷ other, paired by round | median [95% CI] |\n| --- | ---: |")
for h, p in arms:
    ratios = sorted(a / b for a, b in zip(runs[("abtrack", h, p)], runs[("other", h, p)]))
    n = len(ratios)
    k = max(0, math.floor(n / 2 - 0.98 * math.sqrt(n)))
    med = (ratios[(n - 1) // 2] + ratios[n // 2]) / 2
    print(f"| {h} runs{'' if p == 'svg' else ', plot: false'} | {med:.2f}x [{ratios[k]:.2f}, {ratios[n - 1 - k]:.2f}] |")
PY
fi
fi

if part read; then
# Each command by this build and, with BENCH_OTHER, by the other (hyperfine runs them in turn).
for n in 1000 10000; do
  d="$work/svg-$n"
  [ -d "$d" ] || history "$d" "$n"
  cmds=()
  for c in status log render verify; do
    cmds+=(-n "$c ($n)" "$abtrack -q $c")
    if [ -n "$other" ]; then cmds+=(-n "$c ($n), other" "$other -q $c"); fi
  done
  (cd "$d" && hyperfine -N --warmup 2 --runs 20 --export-json "$out/read-$n.json" "${cmds[@]}") >/dev/null
done

python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
def medians(name):
    return {r["command"]: r["median"] for r in json.load(open(os.path.join(d, name)))["results"]}
print("\n| read command | median |\n| --- | ---: |")
for n in (1000, 10000):
    for cmd, t in medians(f"read-{n}.json").items():
        print(f"| {cmd} | {t*1e3:.1f} ms |")
PY
fi

if part watch; then
# The measured repository: one cell whose command does ~10 ms of work (a loop calibrated here)
# and prints how long the work took.
cat >"$work/spin.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
  unsigned long n = strtoul(argv[1], NULL, 10);
  volatile unsigned long x = 0;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (unsigned long i = 0; i < n; ++i) x += i ^ (x >> 3);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("{\"work_ms\": %.4f}\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
  return 0;
}
C
cc -O2 -o "$work/spin" "$work/spin.c"
# Iterations for 10 ms: the median of 5 runs of 10^7.
per=$(for i in 1 2 3 4 5; do "$work/spin" 10000000; done | sed 's/[^0-9.]//g' | sort -g | sed -n 3p)
iters=$(python3 -c "print(int(10000000 * 10 / $per))")
git init -q -b main "$work/watched"
git -C "$work/watched" config user.name bench && git -C "$work/watched" config user.email bench@localhost
cat >"$work/watched/abtrack.yaml" <<YAML
experiment: w
doc: W.md
axes: {x: [1]}
repeats: 3
command: $work/spin $iters
metrics: {work_ms: {json: work_ms}}
plot: false
YAML
(cd "$work/watched" && "$abtrack" -q init && git update-ref refs/bench/base HEAD)
# One timed step with the watcher (on) or without NVML (off), printed as {"step_ms", "first_ms",
# "inv_ms": [2nd, 3rd], "work_ms": [2nd, 3rd]}; the repository is reset afterwards, untimed.
cat >"$work/time-watch.sh" <<'SH'
#!/usr/bin/env bash
set -eu
cd "$(dirname "$0")/watched"
case $1 in
  on) lib=$NVML ;;
  off) lib=$PWD/no-such-libnvidia-ml.so ;;
  *) echo "time-watch.sh: on or off, not $1" >&2; exit 2 ;;
esac
s=$EPOCHREALTIME
ABTRACK_NVML_LIBRARY=$lib "$ABTRACK" -q step >/dev/null
e=$EPOCHREALTIME
us=$(( ${e//[.,]/} - ${s//[.,]/} ))
python3 - "$us" runs/w/0001.json "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
invs = r["invocations"]
for inv in invs:
    if inv["watch"]["nvml"] != (sys.argv[3] == "on"):
        sys.exit(f"time-watch.sh: with the watcher {sys.argv[3]}, an invocation's watch is {inv['watch']}")
print(json.dumps({"step_ms": int(sys.argv[1]) / 1e3, "first_ms": invs[0]["duration_s"] * 1e3,
                  "inv_ms": [i["duration_s"] * 1e3 for i in invs[1:]],
                  "work_ms": r["metrics"]["work_ms"]["samples"][1:]}))
PY
git reset -q --hard refs/bench/base
SH
chmod +x "$work/time-watch.sh"
git init -q -b main "$work/measure-watch"
git -C "$work/measure-watch" config user.name bench && git -C "$work/measure-watch" config user.email bench@localhost
cat >"$work/measure-watch/abtrack.yaml" <<YAML
experiment: watch
doc: WATCH.md
title: "The watcher's cost on a 10 ms invocation"
axes: {watch: ["off", "on"]}
baseline: {watch: "off"}
setup: for i in 1 2 3; do $work/time-watch.sh off >/dev/null && $work/time-watch.sh on >/dev/null || exit 1; done
env: {ABTRACK: $abtrack, NVML: $nvml}
command: $work/time-watch.sh {watch}
metrics:
  step_ms: {json: step_ms, better: lower, unit: ms}
  first_ms: {json: first_ms, better: lower, unit: ms}
  inv_ms: {json: inv_ms, better: lower, unit: ms}
  work_ms: {json: work_ms, better: lower, unit: ms}
plot: false
YAML
(cd "$work/measure-watch" && "$abtrack" -q init && "$abtrack" -q run --rounds "$rounds" >/dev/null)
echo
echo "The watcher (NVML: $nvml), $rounds rounds:"
(cd "$work/measure-watch" && "$abtrack" -q check --format md) || true
(cd "$work/measure-watch" && "$abtrack" -q export --cells --format json) >"$out/watch.json"
python3 - "$out/watch.json" <<'PY'
import json, sys
rows = {r["watch"]: r for r in json.load(open(sys.argv[1]))}
print("\n| ~10 ms of work, 3 invocations | without NVML | with the watcher | change (paired) | in % of 10 ms |\n| --- | ---: | ---: | ---: | ---: |")
for m, what in (("step_ms", "the step"), ("first_ms", "the first invocation (`duration_s`)"),
                ("inv_ms", "the 2nd and 3rd invocations (`duration_s`)"), ("work_ms", "their work, as the command times it")):
    off, on, pct = rows["off"][m], rows["on"][m], rows["on"][f"{m} delta_pct"]
    change = off * pct / 100 if pct is not None else on - off
    print(f"| {what} | {off:.3f} ms | {on:.3f} ms | {change:+.3f} ms | {100 * change / 10:+.2f}% |")
PY
fi
