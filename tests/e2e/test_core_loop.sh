#!/usr/bin/env bash
# Core loop: init + run over a 2x2x2 plan with an excluded cell, a baseline and a gate that
# fails for one cell. One commit per run touching exactly its record and the document,
# parseable trailers, exit 1 for the failed gate, clean tree, verify/status agree, results
# table has one row per cell, prose outside the regions survives byte for byte.
source "$(dirname "$0")/lib.sh"

new_repo
cat >abtrack.yaml <<'EOF'
experiment: core
title: "Core loop"
doc: AB.md
what: the core loop
axes:
  warps: [4, 8]
  stages: [2, 3]
  batch: [16, 64]
exclude: [{warps: 8, stages: 3, batch: 64}]
baseline: {warps: 4}
command: python3 -c 'import json,sys; w,s,b=map(int,sys.argv[1:4]); t=100.0/w+s+b/100.0; print("log line"); print(json.dumps({"time_us":[t,t*1.01,t*0.99,t*1.02],"rel_err":(0.01 if (w,s,b)==(8,3,16) else 0.001)}))' {warps} {stages} {batch}
metrics:
  time_us: {json: time_us, better: lower, unit: us}
  rel_err: {json: rel_err}
gates:
  - rel_err <= 6.7e-3
EOF
echo "scratch" >.gitignore   # the user's own file, committed by the user
git add .gitignore && git commit -q -m "user: initial" || die "git commit"
BASE=$(git rev-parse HEAD)

step "init"
expect_rc 0 ab init
expect_eq "$(commit_count)" 2 "init makes exactly one commit"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "AB.md abtrack.yaml " "init commits the plan and the document"
expect_true "AB.md exists after init" test -f AB.md
expect_contains AB.md "<!-- abtrack:begin results -->"
expect_contains AB.md "<!-- abtrack:end results -->"
expect_contains AB.md "Core loop"
expect_clean "after init"
expect_eq "$(git rev-parse HEAD^)" "$BASE" "init builds on the user's commit"

step "run"
INIT=$(git rev-parse HEAD)
expect_rc 1 ab run   # one cell fails its gate
N=7                  # 2*2*2 cells minus one excluded
expect_eq "$(git rev-list --count "$INIT"..HEAD)" "$N" "one commit per non-excluded cell"
expect_eq "$(git rev-list --merges --count HEAD)" 0 "history stays linear"
expect_eq "$(git symbolic-ref HEAD)" refs/heads/main "HEAD still on main"
expect_clean "after run"
expect_fsck
expect_eq "$(ls runs/core | tr '\n' ' ')" "0001.json 0002.json 0003.json 0004.json 0005.json 0006.json 0007.json " "records 1..7"
expect_records_valid runs/core/*.json

step "per-commit contents and trailers"
fails=0
for k in $(seq 0 $((N - 1))); do
  c=$(git rev-parse "HEAD~$k")
  run=$((N - k))
  rec=runs/core/$(printf '%04d' "$run").json
  # The record, the document, and the document's plot (AB.svg).
  files=$(git show --name-only --format= "$c" | grep -vx 'AB.svg' | sort | tr '\n' ' ')
  expect_eq "$files" "AB.md $rec " "commit HEAD~$k touches exactly its record and the document (and its plot)"
  expect_match "$(git show --stat --format= "$c" -- . ':!AB.svg' | tail -1)" '^ *2 files changed' "git show --stat HEAD~$k"
  git show "$c:$rec" >"$WORK/rec.json" || fail "record $rec not in commit HEAD~$k"
  trailers=$(git log -1 --format=%B "$c" | git interpret-trailers --parse)
  for key in Abtrack-Experiment Abtrack-Run Abtrack-Cell Abtrack-Outcome Abtrack-Code; do
    expect_match "$trailers" "^$key: " "commit HEAD~$k has trailer $key (parsed: $trailers)"
  done
  expect_contains "$trailers" "Abtrack-Experiment: core"
  expect_contains "$trailers" "Abtrack-Run: $run"
  outcome=$(json "$WORK/rec.json" 'd["outcome"]')
  cell=$(json "$WORK/rec.json" '" ".join("%s=%s" % (k, v) for k, v in d["cell"].items())')
  expect_eq "$(json "$WORK/rec.json" 'd["run"]')" "$run" "record $rec has run $run"
  expect_eq "$(json "$WORK/rec.json" 'd["experiment"]')" core "record experiment"
  expect_contains "$trailers" "Abtrack-Outcome: $outcome"
  expect_contains "$trailers" "Abtrack-Cell: $cell"
  expect_contains "$trailers" "Abtrack-Code: $(json "$WORK/rec.json" 'd["code"]["commit"]')"
  expect_eq "$(git log -1 --format=%s "$c")" "abtrack(core): run $run $cell: $outcome" "subject of run $run"
  code=$(json "$WORK/rec.json" 'd["code"]["commit"]')
  expect_true "run $run: code.commit $code is an ancestor of the run commit" git merge-base --is-ancestor "$code" "$c^"
  expect_true "run $run: code.commit has the code that ran (same tree as the parent outside runs/ and the doc)" \
    git diff --quiet "$code" "$c^" -- . ':!runs' ':!AB.md' ':!AB.svg'
  expect_eq "$(json "$WORK/rec.json" 'd["code"]["dirty"]')" false "run $run: clean tree"
  [ "$outcome" = fail ] && fails=$((fails + 1))
done
expect_eq "$fails" 1 "exactly one run fails its gate"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d' | tr '\n' ' ')" \
  "7 6 5 4 3 2 1 " "%(trailers:key=Abtrack-Run,valueonly) lists the runs"
expect_eq "$(git log --format='%(trailers:key=Abtrack-Experiment,valueonly)' | sed '/^$/d' | sort -u)" core "experiment trailer"

step "the failing run"
failrec=$(grep -l '"outcome": *"fail"' runs/core/*.json)
expect_eq "$(json "$failrec" '" ".join("%s=%s" % (k, v) for k, v in d["cell"].items())')" \
  "warps=8 stages=3 batch=16" "the failing cell is the one whose rel_err breaks the gate"
expect_match "$(json "$failrec" 'd["reason"]')" 'rel_err' "the failing run's reason names the gate"
expect_eq "$(json "$failrec" '[g["holds"] for g in d["gates"]]')" "[false]" "gate result recorded"
expect_eq "$(json "$failrec" 'd["gates"][0]["worst"]')" 0.01 "worst observed value"
failrun=$(json "$failrec" 'd["run"]')
expect_contains "$(git log --format='%(trailers:key=Abtrack-Outcome,valueonly)%(trailers:key=Abtrack-Run,valueonly)' | tr -d '\n ')" "fail$failrun" "the failing run is committed with outcome fail"
expect_eq "$(json runs/core/0001.json 'd["metrics"]["time_us"]["samples"] == json.loads(d["invocations"][0]["stdout_tail"].splitlines()[-1])["time_us"]')" true "samples recorded as printed"
expect_eq "$(json runs/core/0001.json 'len(d["metrics"]["time_us"]["samples"])')" 4 "4 samples"
expect_eq "$(json runs/core/0001.json 'd["schema"]')" 1 "schema 1"
expect_eq "$(json runs/core/0001.json 'sorted(k for k in ["schema","experiment","run","cell","command","started","finished","outcome","reason","invocations","metrics","gates","comparison","code","env","abtrack_version","plan_sha256"] if k not in d)')" "[]" "record has every documented key"
expect_eq "$(json runs/core/0005.json 'd["comparison"] is not None')" true "a non-baseline cell has a comparison"
c5=$(git log --format='%H %(trailers:key=Abtrack-Run,valueonly)' | awk '$2 == 5 {print $1}')
expect_match "$(git log -1 --format=%b "$c5")" \
  "^time_us median [0-9.]+ \(n=4\) vs baseline [0-9.]+ \(n=4, pool to run 1\); [-+][0-9.]+% (better|worse|~|equivalent|inconclusive)$" \
  "run 5's commit body compares with the baseline's pool"

step "verify, status"
expect_rc 0 ab verify
expect_rc 0 ab status
expect_contains "$OUT" "0 pending"
expect_not_match "$OUT" '^ +.*pending' "status lists no pending cell"
expect_rc 0 ab status --json
expect_eq "$(json "$OUT" 'd["counts"]["pending"]')" 0 "status --json: no pending"
expect_eq "$(json "$OUT" 'd["counts"]["cells"]')" 7 "status --json: 7 cells"
expect_eq "$(json "$OUT" 'd["counts"]["fail"]')" 1 "status --json: 1 fail"

step "results table"
region AB.md results >"$WORK/results.md" || fail "no results region"
rows=$(table_rows <"$WORK/results.md")
expect_eq "$(printf '%s\n' "$rows" | sed '/^$/d' | wc -l | tr -d ' ')" 7 "one results row per non-excluded cell"
expect_false "no results row for the excluded cell warps=8 stages=3 batch=64" \
  grep -qE '^\| *8 *\| *3 *\| *64 *\|' "$WORK/results.md"
for r in 1 2 3 4 5 6 7; do
  expect_match "$rows" "\| *$r *\|\$" "results table shows run $r"
done

step "second run: nothing pending"
before=$(git rev-parse HEAD)
run_cmd ab run
expect_eq "$(git rev-parse HEAD)" "$before" "a run with nothing pending commits nothing"
expect_true "a run with nothing pending is not an error (exit $RC)" test "$RC" -lt 2

step "prose preserved byte for byte"
python3 - AB.md <<'PY'
import sys
p = sys.argv[1]
t = open(p, encoding="utf-8").read()
t = t.replace("## Notes", "## Notes\n\nProfile: 4 warps stall on `ld.global` — **latency bound**.  \nTrailing spaces above, tab\there, unicode ✓ λ.\n", 1)
t = "<!-- my own comment -->\n" + t + "\nLast line without newline"
open(p, "w", encoding="utf-8", newline="").write(t)
PY
git commit -q -am "user: notes" || fail "committing the prose edit"
outside_regions AB.md >"$WORK/prose.before"
expect_rc 0 ab step --cell warps=4,stages=2,batch=16
expect_eq "$(git log -1 --format='%(trailers:key=Abtrack-Run,valueonly)' | sed '/^$/d')" 8 "rerun of a cell is run 8"
outside_regions AB.md >"$WORK/prose.after"
expect_file_eq "$WORK/prose.before" "$WORK/prose.after" "prose outside the regions changed"
expect_eq "$(tail -c 25 AB.md)" "Last line without newline" "document end kept without a newline"
expect_clean "after step"
expect_rc 0 ab verify
expect_contains "$(git show HEAD:AB.md)" "unicode ✓ λ" "committed doc keeps the prose"

done_testing
