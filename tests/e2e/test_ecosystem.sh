#!/usr/bin/env bash
# Fitting the ecosystem: the plot committed with each run, the environment fingerprint,
# artifact hashes, terminal progress, export, bash completion.
source "$(dirname "$0")/lib.sh"

write_plan() {  # write_plan CONTENT_OF_K8 (what warps=8 writes into its artifact)
  cat >abtrack.yaml <<'YAML'
experiment: eco
doc: AB.md
axes:
  warps: [4, 8]
  batch: [16, 64]
baseline: {warps: 4}
artifacts: ['out/k-{warps}.bin', 'out/never.bin']
command: sh bench.sh {warps}
metrics:
  time_us: {json: t, better: lower, unit: us}
YAML
  cat >bench.sh <<SH
mkdir -p out
if [ "\$1" = 8 ]; then printf '$1' >out/k-8.bin; printf '{"t": [80,81,82,83,84,85,86,87]}\\n'
else printf same >out/k-4.bin; printf '{"t": [100,101,102,103,104,105,106,107]}\\n'; fi
SH
  printf 'out/\n' >.gitignore
}

step "plot committed with the run and linked from the document"
new_repo plot
write_plan same
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run
expect_contains "$(git show --name-only --format= HEAD)" "AB.svg"
expect_contains "$(git show --name-only --format= HEAD)" "runs/eco/0004.json"
expect_contains "$(region AB.md summary)" "![eco: time_us by batch](AB.svg)"
expect_eq "$(git show --name-only --format= HEAD | wc -l)" "3" "the commit holds record, document and plot"
expect_eq "$(git log --format= --name-only | grep -c '^AB.svg$')" "4" "every run commits the plot"
# The plot is well-formed SVG with one series per warps variant and one point per batch,
# each point's median and CI the cell's (runs 1 and 3: warps=4 and 8 at batch=16).
git show HEAD:AB.svg >"$WORK/plot.svg"
"$PY" - "$WORK/plot.svg" >"$WORK/plot.txt" <<'PY' || fail "AB.svg is not well-formed SVG"
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
for panel in root.iterfind("s:g[@class='panel']", ns):
    print("panel", panel.get("data-metric"), panel.find("s:text[@class='title']", ns).text)
    print("xlabel", panel.find("s:text[@class='xlabel']", ns).text)
    for series in panel.iterfind("s:g[@class='series']", ns):
        pts = series.findall("s:g[@class='point']", ns)
        line = series.find("s:polyline", ns).get("points").split()
        print("series", series.get("data-variant"), len(pts), "points", len(line), "vertices",
              " ".join("%s:%s[%s,%s]" % (p.get("data-x"), p.get("data-median"), p.get("data-lo"), p.get("data-hi")) for p in pts))
    print("legend", [t.text for t in panel.iterfind("s:g[@class='legend']/s:g/s:text", ns)])
PY
expect_eq "$(grep -c '^panel' "$WORK/plot.txt")" "1" "one panel: the one metric with better:"
expect_contains "$WORK/plot.txt" "panel time_us time_us (us): median with 95% CI, lower is better"
expect_contains "$WORK/plot.txt" "xlabel batch"
expect_contains "$WORK/plot.txt" "series warps=4 2 points 2 vertices 16:103.5[100,106] 64:103.5[100,106]"
expect_contains "$WORK/plot.txt" "series warps=8 2 points 2 vertices 16:83.5[80,86] 64:83.5[80,86]"
expect_contains "$WORK/plot.txt" "legend ['warps=4', 'warps=8']"
expect_rc 0 ab verify
expect_clean "after run with a plot"
expect_rc 0 ab render
expect_clean "render changes nothing"
# render redraws a deleted or edited plot, byte for byte what the last run committed
rm AB.svg
expect_rc 0 ab render
expect_contains "$(cat "$OUT" "$ERR")" "rendered AB.svg from 4 runs"
expect_eq "$(git hash-object AB.svg)" "$(git rev-parse HEAD:AB.svg)" "the plot is redrawn as committed"
printf '<svg/>' >AB.svg
expect_rc 1 ab verify
expect_contains "$ERR" "AB.svg: differs from a fresh plot of the records"
expect_contains "$ERR" "abtrack render"
expect_rc 0 ab render
expect_clean "render puts an edited plot back"
expect_rc 0 ab verify
rm AB.svg
expect_rc 1 ab verify
expect_contains "$ERR" "AB.svg: missing"
git checkout -q -- AB.svg

step "fingerprint in the record"
expect_eq "$(json runs/eco/0001.json 'sorted(d["env"].keys())')" \
  '["compiler", "cpu", "cpus", "cuda", "driver", "gpus", "host", "os"]'
expect_eq "$(json runs/eco/0001.json 'isinstance(d["env"]["gpus"], list)')" "true"
expect_eq "$(json runs/eco/0001.json 'all(sorted(g) == ["driver","mem_clock_mhz","name","power_limit_w","sm_clock_mhz","temperature_c","uuid"] for g in d["env"]["gpus"])')" "true"
expect_match "$(json runs/eco/0001.json 'd["env"]["compiler"]')" '^(GCC|Clang) [0-9]'
if [ ! -e /dev/nvidiactl ]; then
  expect_eq "$(json runs/eco/0001.json 'd["env"]["gpus"]')" "[]" "no GPU: an empty list"
fi

step "artifact hashes and the identical-artifacts warning"
expect_eq "$(json runs/eco/0004.json 'd["artifacts"][0]["path"]')" "out/k-8.bin"
expect_eq "$(json runs/eco/0004.json 'd["artifacts"][0]["sha256"]')" "$(printf same | sha256sum | cut -d' ' -f1)"
expect_eq "$(json runs/eco/0004.json 'd["artifacts"][1]')" '{"bytes": null, "cuda": null, "missing": true, "path": "out/never.bin", "sha256": null}'
expect_contains "$(region AB.md summary)" "identical artifacts: variants warps=4, warps=8 produced byte-identical out/k-4.bin, out/k-8.bin"

step "different artifacts: no warning"
new_repo plot2
write_plan different
git_commit_all "plan"
expect_rc 0 ab init
expect_rc 0 ab run
expect_not_contains "$(region AB.md summary)" "identical artifacts"

step "a baseline from another machine is flagged"
"$PY" - runs/eco/0001.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["env"]["host"] = "other-host"
d["env"]["gpus"] = [{"name": "NVIDIA H100", "uuid": "GPU-x", "driver": "550.1", "sm_clock_mhz": 1980,
                     "mem_clock_mhz": 2619, "power_limit_w": 700.0, "temperature_c": 40}]
json.dump(d, open(sys.argv[1], "w"), indent=2)
PY
git_commit_all "pretend the baseline ran elsewhere"
expect_rc 0 ab render
expect_contains "$(region AB.md summary)" "warps=8 batch=16 is compared with its baseline across different machines: baseline run 1 on other-host (NVIDIA H100)"
expect_not_contains "$(region AB.md summary)" "warps=8 batch=64 is compared"

step "an empty PATH: the plot needs no tool"
new_repo noplot
write_plan different
# Shell builtins only: PATH will have nothing on it.
sed -i 's|^command: .*|command: . ./builtin.sh|; /^artifacts/d' abtrack.yaml
printf '%s\n' "printf '{\"t\": [1, 2, 3]}\\n'" >builtin.sh
git_commit_all "plan"
expect_rc 0 ab init
mkdir -p "$WORK/nobin"
expect_rc 0 env PATH="$WORK/nobin" "$ABTRACK" run
expect_not_contains "$ERR" "warning"
expect_eq "$(git show --name-only --format= HEAD | sort | tr '\n' ' ')" "AB.md AB.svg runs/eco/0004.json " "record, document and plot"
expect_contains "$(region AB.md summary)" "![eco: time_us by batch](AB.svg)"
expect_rc 0 ab verify

step "progress on a terminal: one redrawn line with ETA, coloured outcomes"
new_repo tty
write_plan same
sed -i 's/^command: /command: sleep 0.3 \&\& /' abtrack.yaml
git_commit_all "plan"
expect_rc 0 ab init
if command -v script >/dev/null; then
  TERM=xterm script -qfec "$ABTRACK run" /dev/null >"$WORK/tty.out" 2>&1 </dev/null
  expect_contains "$WORK/tty.out" "[4/4] warps=8 batch=64"
  expect_contains "$WORK/tty.out" "ETA 0:0"
  expect_contains "$WORK/tty.out" "elapsed 0:0"
  expect_true "carriage returns redraw the line" grep -q $'\r''abtrack: \[2/4\]' "$WORK/tty.out"
  expect_true "pass is coloured on a terminal" grep -q $'\033''\[32mpass' "$WORK/tty.out"
  expect_rc 0 ab run --all --quiet  # (not a terminal here) nothing on stderr with -q
  expect_eq "$(cat "$ERR")" "" "--quiet prints no progress"
  NO_COLOR=1 TERM=xterm script -qfec "$ABTRACK run --all" /dev/null >"$WORK/nocolor.out" 2>&1 </dev/null
  expect_contains "$WORK/nocolor.out" "ETA"
  expect_false "NO_COLOR: no escape codes" grep -q $'\033' "$WORK/nocolor.out"
  TERM=xterm script -qfec "$ABTRACK -q run --all" /dev/null >"$WORK/quiet.out" 2>&1 </dev/null
  expect_not_contains "$WORK/quiet.out" "[1/4]"
  expect_contains "$WORK/quiet.out" "run 13 warps=4 batch=16:"
else
  echo "script (bsdutils) not installed: the terminal checks are skipped" >&2
fi
step "progress when stderr is not a terminal: plain lines"
expect_rc 0 ab run --all
expect_contains "$ERR" "abtrack: [1/4] warps=4 batch=16  elapsed"
expect_contains "$ERR" "abtrack: [2/4] warps=4 batch=64  elapsed"
expect_contains "$ERR" "ETA"
expect_not_contains "$ERR" $'\r'
expect_false "no escape codes in a pipe" grep -q $'\033' "$OUT" "$ERR"

step "export"
cd "$WORK/plot"
expect_rc 0 ab export --format csv
expect_eq "$(head -1 "$OUT" | tr -d '\r')" "run,warps,batch,outcome,time_us,time_us delta_pct,time_us delta_abs,time_us verdict,reason,code"
expect_match "$OUT" '^1,4,16,pass,103.5,,,baseline,'
expect_match "$OUT" '^3,8,16,pass,83.5,-19\.[0-9]+,,better,'
expect_eq "$(grep -c . "$OUT")" "5" "a header and one row per run"
expect_rc 0 ab export --format md --cells
expect_contains "$OUT" "| warps | batch | n | outcome | time_us (us) | time_us delta_pct | time_us delta_abs (us) | time_us verdict | runs |"
expect_contains "$OUT" "| 8 | 64 | 8 | pass | 83.5 |"
expect_rc 0 ab export --format json
expect_eq "$(json "$OUT" 'len(d)')" "4"
expect_eq "$(json "$OUT" 'd[2]["time_us verdict"]')" "better"
expect_eq "$(json "$OUT" 'd[0]["time_us delta_pct"]')" "null"
expect_eq "$(json "$OUT" 'd[3]["run"]')" "4"
expect_rc 2 ab export --format xml
expect_contains "$ERR" "--format must be csv, md or json"
expect_rc 0 ab help export
expect_contains "$OUT" "export --format csv|md|json [--cells]"
expect_rc 0 ab help
expect_contains "$OUT" "  export "

step "bash completion installed by the build"
if [ -n "${ABTRACK_BUILD_DIR:-}" ] && command -v cmake >/dev/null; then
  expect_rc 0 cmake --install "$ABTRACK_BUILD_DIR" --prefix "$WORK/prefix" --component Unspecified
  comp=$WORK/prefix/share/bash-completion/completions/abtrack
  expect_true "completion file installed" test -f "$comp"
  reply=$(PATH=$(dirname "$ABTRACK"):$PATH bash -c '
    source "$1"
    COMP_WORDS=(abtrack ex); COMP_CWORD=1; _abtrack; echo "${COMPREPLY[*]}"
    COMP_WORDS=(abtrack export --format ""); COMP_CWORD=3; _abtrack; echo "${COMPREPLY[*]}"
    COMP_WORDS=(abtrack step --cell ""); COMP_CWORD=3; _abtrack; echo "${COMPREPLY[*]}"' _ "$comp")
  expect_contains "$reply" "export"
  expect_contains "$reply" "csv md json"
  expect_contains "$reply" "warps=8,batch=64"
else
  echo "no build dir: the install check is skipped" >&2
fi

step "a baseline measured on other code is flagged"
new_repo othercode
printf '2\n' >k.txt
cat >abtrack.yaml <<'EOF'
experiment: cw
doc: AB.md
axes: {w: [4, 8]}
baseline: {w: 4}
command: 'v=$(cat k.txt); echo "{\"t\": [$v, $v, $v, $v, $v, $v]}"'
metrics: {t: {json: t, better: lower}}
EOF
git_commit_all "user: plan"
expect_rc 0 ab init
expect_rc 0 ab step --cell w=4
printf '1\n' >k.txt && git_commit_all "user: a faster kernel"
expect_rc 0 ab step --cell w=8
expect_match "$(region AB.md summary)" "w=8 is compared with a baseline measured on other code: baseline run 1 on [0-9a-f]{12}, run 2 on $(git rev-parse --short=12 HEAD~1)"
expect_rc 0 ab step --cell w=4
expect_not_contains "$(region AB.md summary)" "measured on other code" "the baseline run again on this code: no warning"

done_testing
