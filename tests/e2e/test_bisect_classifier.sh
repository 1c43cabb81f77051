#!/usr/bin/env bash
# bisect as a classifier, on a plan without revisions: (build:, command and one cell): a scripted
# history of 12 commits of a shell program whose samples come from a noise model (awk with a
# seeded generator: a 2% offset per invocation, 3% per sample, 10 samples), where the 7th commit
# makes it 30% slower. bisect measures bad against good until bad is shown worse, then each tested
# commit against good and bad in the same rounds until it lies on one side of their midpoint, and
# names the 7th; each step line shows the change, its CI, the position θ and the rounds it took,
# and is one commit. Without a regression it says it could not confirm one (exit 1); a commit
# midway between good and bad is never classified: the bisect ends undecided between the two (exit
# 1); the budget ends it too. Bad options are usage errors, and nothing is committed.
source "$(dirname "$0")/lib.sh"
command -v awk >/dev/null || { echo "SKIP: no awk" >&2; DONE=1; exit 77; }

COUNT=$WORK/count     # the invocations so far: each one's seed
BUILDS=$WORK/builds   # one line per build: the tree's folder
SLOW=$WORK/slow       # while it exists, every invocation takes 0.1 s more
: >"$BUILDS"
# write_noisy_bench BASE: bench.sh prints {"t": [10 samples]} around BASE.
write_noisy_bench() {
  cat >bench.sh <<EOF_BENCH
#!/bin/sh
BASE=$1
n=\$(cat "$COUNT" 2>/dev/null || echo 0); echo \$((n + 1)) >"$COUNT"
[ -e "$SLOW" ] && sleep 0.1
awk -v seed="\$n" -v base="\$BASE" 'function z() { return sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand()) }
BEGIN { srand(seed + 1); off = 0.02 * z(); printf "{\"t\": ["
        for (i = 0; i < 10; i++) printf "%s%.3f", (i ? ", " : ""), base * exp(off + 0.03 * z())
        print "]}" }'
EOF_BENCH
}

write_plan() {  # write_plan EXPERIMENT
  cat >abtrack.yaml <<EOF2
experiment: $1
doc: DOC.md
axes: {size: [small]}
build: "pwd >> $BUILDS && mkdir -p build && cp bench.sh build/bench.sh"
command: sh build/bench.sh
min_effect: 2%
metrics:
  t: {json: t, better: lower, unit: us}
EOF2
}

new_repo cls
write_noisy_bench 100
write_plan cls
git add bench.sh abtrack.yaml && git commit -q -m "c1: the bench"
expect_rc 0 ab init
c=("" "$(git rev-parse HEAD~1)")
for i in 2 3 4 5 6 7 8 9 10 11 12; do
  if [ "$i" = 7 ]; then sed -i 's/^BASE=100$/BASE=130/' bench.sh; else echo "# change $i" >>bench.sh; fi
  git commit -q -am "c$i: change $i" && c[$i]=$(git rev-parse HEAD)
done
head_before=$(git rev-parse HEAD)

step "bad options are usage errors, and nothing is committed"
expect_rc 2 ab bisect --good main~11 --bad main --max-rounds 1
expect_contains "$ERR" "--max-rounds must be a whole number from 2 to 10000, not '1'"
expect_rc 2 ab bisect --good main~11 --bad main --rounds 1
expect_contains "$ERR" "--rounds (now --max-rounds) must be a whole number from 2"
expect_rc 2 ab bisect --good main~11 --bad main --budget soon
expect_contains "$ERR" "--budget 'soon' is not a duration"
expect_contains "$ERR" "e.g. --budget 90s, 30m, 2h"
expect_rc 2 ab bisect --good main~11 --bad main --min-effect lots
expect_contains "$ERR" "--min-effect 'lots' is not a percentage"
expect_rc 2 ab bisect --good main~11 --bad main --cell rev=good
expect_contains "$ERR" "without rev"
expect_eq "$(git rev-parse HEAD)" "$head_before" "nothing was committed"
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" 0 "nothing was built"
expect_rc 0 ab help bisect
expect_contains "$OUT" "--max-rounds N" "help names the options"
expect_contains "$OUT" "--budget D"
expect_eq "$(bash -c 'source "$1"; COMP_WORDS=(abtrack bisect --m); COMP_CWORD=2; _abtrack; echo "${COMPREPLY[*]}"' _ "$E2E_DIR/../../completions/abtrack.bash")" \
  "--metric --max-rounds --min-effect" "completion offers them"

step "a plan without revisions: the 7th commit is named"
expect_rc 0 ab bisect --good main~11 --bad main --seed 1
expect_contains "$OUT" "first bad commit: ${c[7]} c7: change 7" "the 7th commit is the first bad one"
expect_match "$OUT" "^good ${c[1]:0:7} vs bad ${c[12]:0:7}: \+[0-9.]+% worse, CI \[\+[0-9.]+%, \+[0-9.]+%\], [0-9]+ rounds \([0-9]+ invocations, [0-9.]+ s\)$" \
  "step 0: bad is worse, with its CI and how much it measured"
expect_match "$OUT" "^step 1/[0-9]: ${c[6]:0:7} c6: change 6: good: [-+][0-9.]+% vs good, CI \[[-+][0-9.]+%, [-+][0-9.]+%\]; θ -?[0-9.]+ \[-?[0-9.]+, -?[0-9.]+\]; [0-9]+ rounds \([0-9]+ invocations, [0-9.]+ s\)$" \
  "step 1 tests the middle (c6) and classifies it good, with the change, θ and the rounds"
expect_match "$OUT" "^step [0-9]/[0-9]: ${c[7]:0:7} c7: change 7: bad: \+[0-9.]+% vs good, CI \[\+[0-9.]+%, \+[0-9.]+%\]; θ [0-9.]+ \[" \
  "c7 is classified bad"
expect_not_contains "$OUT" "same vs good"
expect_not_contains "$OUT" "undecided"
steps=$(grep -c '^step ' "$OUT")
expect_eq "$(git rev-list --count "$head_before"..HEAD)" "$((steps + 1))" "one commit per step, step 0 included"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Bisect-Step,valueonly)' "$head_before"..HEAD | sed '/^$/d' | sort -n | tr '\n' ' ')" \
  "$(seq 0 "$steps" | tr '\n' ' ')" "the commits are steps 0..$steps"
expect_eq "$(sort -u "$BUILDS" | wc -l | tr -d ' ')" "$(wc -l <"$BUILDS" | tr -d ' ')" "each tree was built once (the build is not a setup)"
expect_eq "$(wc -l <"$BUILDS" | tr -d ' ')" "$((steps + 2))" "good, bad and each tested commit built"
folder=$(git ls-tree --name-only -d HEAD runs/cls/bisect/ | head -1)
git show "HEAD:$folder/bisect.json" >"$WORK/bisect.json"
expect_eq "$(json "$WORK/bisect.json" 'd["status"]')" found
expect_eq "$(json "$WORK/bisect.json" '" ".join(d["revisions"][k] for k in ("good", "tested", "bad"))')" "good tested bad" \
  "the plan's single cell measured as three revisions"
expect_eq "$(json "$WORK/bisect.json" 'all(s["summary"]["rounds"] >= 2 and s["summary"]["invocations"] >= 2 * s["summary"]["rounds"] for s in d["steps"])')" true \
  "each step records its rounds and invocations"
expect_eq "$(json "$WORK/bisect.json" 'all(sorted({r["rev"] for r in s["runs"]}) == ["bad", "good", "tested"] for s in d["steps"][1:])')" true \
  "each later step measured good, the commit tested and bad"
expect_eq "$(json "$WORK/bisect.json" 'all(len({(r["batch"], r["round"]) for r in s["runs"]}) * 3 == len(s["runs"]) for s in d["steps"][1:])')" true \
  "in the same rounds"
expect_eq "$(json "$WORK/bisect.json" '[s["judgement"] for s in d["steps"]][0]')" bad
expect_eq "$(json "$WORK/bisect.json" 'all((s["summary"]["theta"] > 0.5) == (s["judgement"] == "bad") for s in d["steps"][1:])')" true \
  "θ above the midpoint for the bad ones"
log=$(git show "HEAD:$folder/log")
expect_contains "$log" "at most 128 rounds a step, alpha 0.05 (0.0125 a step), min_effect 2%" "the log says the error budget"
expect_match "$log" "median good [0-9.]+ us, tested [0-9.]+ us, bad [0-9.]+ us" "each step's medians"
expect_rc 0 ab verify
expect_clean "the work tree is clean"

step "no regression: exit 1 with the clear message"
head_before=$(git rev-parse HEAD)
expect_rc 1 ab bisect --good "${c[2]}" --bad "${c[6]}" --max-rounds 8 --seed 2
expect_match "$ERR" "could not confirm that bad ${c[6]:0:7} is worse than good ${c[2]:0:7} on t after 8 rounds \(16 invocations, [0-9.]+ s\): the change is [-+][0-9.]+% \[[-+][0-9.]+%, [-+][0-9.]+%\]" \
  "says how much it measured and the change it saw"
expect_contains "$ERR" "measure more (--max-rounds, now 8; --budget)"
expect_eq "$(git rev-list --count "$head_before"..HEAD)" 1 "step 0 is committed"
expect_rc 1 ab bisect --good "${c[2]}" --bad "${c[6]}" --min-effect 15% --seed 2
expect_contains "$ERR" "bad is not worse than good on t beyond min_effect (15%): nothing to bisect"
expect_match "$OUT" "not worse \(within min_effect 15% or better\)" "step 0 refutes a 15% regression"

step "a commit midway between good and bad is never classified: undecided between them"
new_repo mid
write_noisy_bench 100
write_plan mid
git add bench.sh abtrack.yaml && git commit -q -m "m1: fast" && m1=$(git rev-parse HEAD)
expect_rc 0 ab init
sed -i 's/^BASE=100$/BASE=114.0175/' bench.sh && git commit -q -am "m2: midway" && m2=$(git rev-parse HEAD)
sed -i 's/^BASE=114.0175$/BASE=130/' bench.sh && git commit -q -am "m3: slow" && m3=$(git rev-parse HEAD)
expect_rc 1 ab bisect --good "$m1" --bad "$m3" --max-rounds 12 --seed 3
expect_match "$OUT" "^step 1/1: ${m2:0:7} m2: midway: undecided: \+[0-9.]+% vs good, CI \[[-+0-9.]+%, \+[0-9.]+%\]; θ [0-9.]+ \[[-0-9.]+, [0-9.]+\]; 12 rounds \(36 invocations, [0-9.]+ s\) \(--max-rounds 12 reached" \
  "the midway commit is undecided after 12 rounds"
expect_contains "$OUT" "undecided between ${m1:0:7} m1: fast and ${m3:0:7} m3: slow"
expect_contains "$OUT" "step 1 could not place ${m2:0:7} on either side of the midpoint of good and bad after 12 rounds (36 invocations"
expect_not_contains "$OUT" "first bad commit:"
head_done=$(git rev-parse HEAD)
expect_rc 1 ab bisect --good "$m1" --bad "$m3" --max-rounds 12 --seed 3
expect_contains "$OUT" "undecided between" "finished: the same command prints the result again"
expect_contains "$ERR" "finished before"
expect_eq "$(git rev-parse HEAD)" "$head_done" "and commits nothing"

step "a plan whose revisions are called good and bad: they play good and bad"
sed -e 's/^experiment: mid$/experiment: named/' -e 's/^doc: DOC.md$/doc: NAMED.md/' -e 's/^axes: .*$/revisions: {good: main, bad: main}\nbaseline: {rev: good}/' \
  abtrack.yaml >named.yaml
git add named.yaml && git commit -q -m "the named plan"
expect_rc 0 ab -p named.yaml init
expect_rc 0 ab -p named.yaml bisect --good "$m2" --bad "$m3" --seed 5
expect_contains "$OUT" "first bad commit: $m3 m3: slow"
git show "HEAD:$(git ls-tree --name-only -d HEAD runs/named/bisect/ | head -1)/bisect.json" >"$WORK/named.json"
expect_eq "$(json "$WORK/named.json" '" ".join(d["revisions"][k] for k in ("good", "tested", "bad"))')" "good tested bad"

step "the budget ends a bisect"
touch "$SLOW"
expect_rc 1 ab bisect --good "$m1" --bad "$m3" --budget 1s --seed 4
rm -f "$SLOW"
both="$(cat "$OUT" "$ERR")"
expect_match "$both" "could not confirm that bad|undecided between" "the budget ran out before the bisect finished"
expect_match "$both" "budget is spent|budget \(1s\) was spent" "and it says so"
done_testing
