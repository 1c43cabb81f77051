#!/usr/bin/env bash
# Bookkeeping benchmarks (issue: "per-step overhead below the git CLI's own commit"), measured
# side by side on the same repositories. Results go to docs/PERFORMANCE.md by hand.
#
#   scripts/bench.sh [build-dir]        (default build/; needs hyperfine, git, python3)
#   BENCH_ROUNDS=N scripts/bench.sh     (rounds of the interleaved step measurement; default 60)
#
# 1. `abtrack step` on a trivial command vs. a shell script doing the same bookkeeping with the
#    git CLI (write a record and a document line, git add both, git commit), at 10 and 1000 runs,
#    with and without the plot: interleaved round by round (bench/paired.py), ratios per round.
# 2. status, log, render, verify at 1000 and 10,000 runs (hyperfine).
#
# The repositories go under $TMPDIR (mktemp -d), so TMPDIR picks the file system measured
# (PERFORMANCE.md §2.12 ran it on ext4 with and without a journal, XFS and tmpfs); the file
# system is printed first. On ext4 without a journal (the VM of docs/PERFORMANCE.md), creating a
# file gets slower for a few minutes after many files were deleted, and this script deletes
# ~30,000 when it ends: run it again only after a few idle minutes, or expect the "slow phase" of
# PERFORMANCE.md §2.11.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
abtrack="$build/abtrack"
[ -x "$abtrack" ] || { echo "bench: build abtrack first ($abtrack)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "bench: hyperfine is missing (apt-get install hyperfine)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
echo "bench: repositories in $work: $fs_type $journal on $dev"

history() {  # history DIR N: an experiment with N runs, its document rendered and committed
  python3 "$here/bench/make_history.py" "$1" "$2"
  (cd "$1" && "$abtrack" -q render && git add -A && git commit -qm "render" && "$abtrack" -q status >/dev/null)
}

# The git CLI doing what one step does: a record as large as the step's, written where the step
# writes records (runs/bench/, a folder of 10 or 1000 files), a line appended to the experiment's
# document, add, commit. Every repository is reset after each timed command, so neither the
# script's records nor its line outlive the command that wrote them.
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
# Sessions 1 to 6 measured against this lighter script: a 60-byte record in a folder of its own
# (runs/gitcli/, one file), the line in a copy of the document. Kept as a reference column.
cat >"$work/git-own.sh" <<'SH'
#!/bin/sh
set -e
mkdir -p runs/gitcli
n=$(ls runs/bench runs/gitcli | wc -l)
n=$((n + 1))
f=$(printf 'runs/gitcli/%04d.json' "$n")
printf '{"schema": 1, "run": %d, "metrics": {"t": {"samples": [1, 2, 3]}}}\n' "$n" >"$f"
[ -f GITCLI.md ] || cp BENCH_AB.md GITCLI.md
printf '| %d | variant=a batch=1 | pass |\n' "$n" >>GITCLI.md
git add "$f" GITCLI.md
git commit -q -m "run $n" -m "Abtrack-Run: $n"
SH
chmod +x "$work/git-own.sh"
chmod +x "$work/git-step.sh"

# The step measurements, interleaved (bench/paired.py): each round runs abtrack step and the git
# CLI script at 10 and at 1000 runs of history, with and without the plot (`plot: false`), in a
# shuffled order; every repository is reset to its history after each command (untimed), so "10
# runs" stays 10. Ratios are taken within a round: drift on a noisy machine cancels.
for n in 10 1000; do
  history "$work/h$n" "$n"
  history "$work/np$n" "$n"
  (cd "$work/np$n" && printf 'plot: false\n' >>abtrack.yaml && git commit -qam "plan: plot: false")
done
step="$abtrack -q step --cell variant=a,batch=1"
python3 "$here/bench/paired.py" --rounds "${BENCH_ROUNDS:-60}" --warmup 3 --reset-git --json "$out/step.json" \
  "step@10=$work/h10::$step" "git@10=$work/h10::$work/git-step.sh" \
  "step@1000=$work/h1000::$step" "git@1000=$work/h1000::$work/git-step.sh" \
  "step-noplot@10=$work/np10::$step" "git-noplot@10=$work/np10::$work/git-step.sh" \
  "step-noplot@1000=$work/np1000::$step" "git-noplot@1000=$work/np1000::$work/git-step.sh" \
  "git-own@10=$work/h10::$work/git-own.sh" "git-own@1000=$work/h1000::$work/git-own.sh" \
  "10 runs=step@10/git@10" "1000 runs=step@1000/git@1000" "growth=step@1000/step@10" \
  "10 runs, plot: false=step-noplot@10/git-noplot@10" "1000 runs, plot: false=step-noplot@1000/git-noplot@1000" \
  "growth, plot: false=step-noplot@1000/step-noplot@10" \
  "10 runs, against the sessions 1-6 script=step@10/git-own@10" "1000 runs, against the sessions 1-6 script=step@1000/git-own@1000"
for n in 1000 10000; do
  [ -d "$work/h$n" ] || history "$work/h$n" "$n"
  (cd "$work/h$n" && hyperfine -N --warmup 2 --runs 20 --export-json "$out/read-$n.json" \
     -n "status ($n)" "$abtrack -q status" -n "log ($n)" "$abtrack -q log" \
     -n "render ($n)" "$abtrack -q render" -n "verify ($n)" "$abtrack -q verify")
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
