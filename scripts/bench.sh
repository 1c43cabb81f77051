#!/usr/bin/env bash
# Bookkeeping benchmarks (issue: "per-step overhead below the git CLI's own commit"), measured
# side by side with hyperfine on the same repository. Results go to docs/PERFORMANCE.md by hand.
#
#   scripts/bench.sh [build-dir]        (default build/; needs hyperfine, git, python3)
#
# 1. `abtrack step` on a trivial command vs. a shell script doing the same bookkeeping with the
#    git CLI (write a record and a document line, git add both, git commit), at 10 and 1000 runs.
# 2. status, log, render, verify at 1000 and 10,000 runs.
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

history() {  # history DIR N: an experiment with N runs, its document rendered and committed
  python3 "$here/bench/make_history.py" "$1" "$2"
  (cd "$1" && "$abtrack" -q render && git add -A && git commit -qm "render" && "$abtrack" -q status >/dev/null)
}

# The git CLI doing what one step does: a record, a document line, add, commit.
cat >"$work/git-step.sh" <<'SH'
#!/bin/sh
set -e
# Its own folder and document, so abtrack's records stay abtrack's (same sizes, same work).
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
chmod +x "$work/git-step.sh"

# step_bench NAME LABEL [PLAN-LINE]: abtrack step against the git CLI script at 10 and 1000 runs,
# in histories whose plan gets PLAN-LINE appended (e.g. `plot: false`: no SVG plot in the commit).
step_bench() {
  local name=$1 label=$2 extra=${3:-} n
  for n in 10 1000; do
    history "$work/$name$n" "$n"
    (cd "$work/$name$n" &&
     if [ -n "$extra" ]; then printf '%s\n' "$extra" >>abtrack.yaml && git commit -qam "plan: $extra"; fi &&
     hyperfine -N --warmup 3 --runs 30 --export-json "$out/$name-$n.json" \
       -n "$label ($n runs)" "$abtrack -q step --cell variant=a,batch=1" \
       -n "git CLI script ($n runs)" "$work/git-step.sh")
  done
}
step_bench h "abtrack step"
step_bench np "abtrack step, plot: false" "plot: false"
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
print("\n| measurement | median | ratio |\n| --- | ---: | ---: |")
for name, label in (("h", "abtrack step"), ("np", "abtrack step, plot: false")):
    step = {}
    for n in (10, 1000):
        m = medians(f"{name}-{n}.json")
        a, g = m[f"{label} ({n} runs)"], m[f"git CLI script ({n} runs)"]
        step[n] = a
        print(f"| {label}, {n} runs | {a*1e3:.1f} ms | {a/g:.2f}x the git CLI script ({g*1e3:.1f} ms) |")
    print(f"| {label}, 1000 vs 10 runs | | {step[1000]/step[10]:.2f}x |")
for n in (1000, 10000):
    for cmd, t in medians(f"read-{n}.json").items():
        print(f"| {cmd} | {t*1e3:.1f} ms | |")
PY
