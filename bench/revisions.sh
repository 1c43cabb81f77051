#!/usr/bin/env bash
# The cost of revisions (docs/PERFORMANCE.md "Revisions"): in a scratch repository of 10,000
# files, (1) checking out a revision as a work tree (.git/abtrack/trees/<key>/code/) and (2) a cached
# `abtrack run` of 2 revisions x 1 cell, against the same plan without revisions (2 cells of an
# ordinary axis), interleaved round by round; medians of each and of the per-round difference.
#   bench/revisions.sh [build-dir] [rounds]     (default build/, 10 rounds)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
abtrack=$(cd "${1:-$here/build}" && pwd)/abtrack
rounds=${2:-10}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work" && git init -q -b main repo && cd repo
git config user.name bench && git config user.email bench@localhost
for d in $(seq 0 99); do mkdir -p src/d$d; for f in $(seq 0 99); do echo "$d $f" >src/d$d/f$f.c; done; done
git add -A && git commit -q -m "10,000 files" && git branch base && echo change >>src/d0/f0.c && git commit -q -am "one change"
cat >rev.yaml <<'P'
experiment: rev
doc: REV.md
revisions: {base: base, mine: main}
build: "true"
rounds: 1
command: "echo '{\"t\": 1}'"
metrics: {t: {json: t}}
P
cat >plain.yaml <<'P'
experiment: plain
doc: PLAIN.md
axes: {v: [base, mine]}
command: "echo '{\"t\": 1}'"
metrics: {t: {json: t}}
P
"$abtrack" -q -p rev.yaml init && "$abtrack" -q -p plain.yaml init
# ms COMMAND...: its wall time in microseconds; a failed command stops the script with its output
# (a run that errors out early would otherwise read as a fast one).
ms() {
  local s e
  s=$(date +%s%N)
  "$@" >"$work/out" 2>&1 || { echo "bench: $* failed:" >&2; cat "$work/out" >&2; kill -TERM $$; exit 1; }
  e=$(date +%s%N)
  echo $(( (e - s) / 1000 ))
}
first=$(ms "$abtrack" -q -p rev.yaml run)
echo "first run (writes 2 trees of 10,000 files, builds): $(( first / 1000 )) ms"
"$abtrack" -q -p plain.yaml run >/dev/null
for _ in $(seq "$rounds"); do
  echo "rev $(ms "$abtrack" -q -p rev.yaml run --all) plain $(ms "$abtrack" -q -p plain.yaml run --all)"
done | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin]
rev = [int(r[1]) / 1000 for r in rows]; plain = [int(r[3]) / 1000 for r in rows]
print(f"cached run, 2 revisions x 1 cell: median {statistics.median(rev):.1f} ms; without revisions, 2 cells: {statistics.median(plain):.1f} ms;"
      f" per-round difference median {statistics.median(a - b for a, b in zip(rev, plain)):+.1f} ms ({len(rows)} rounds)")'
