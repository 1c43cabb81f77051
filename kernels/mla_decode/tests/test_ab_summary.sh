#!/usr/bin/env bash
# tools/ab.sh's bookkeeping without a GPU: real result lines of the CPU bench go through
# ab_line.py (as ab.sh sends them) into ab.jsonl, and ab_summary.py summarizes them; then a file
# with known medians checks the comparison against the baseline (the first variant).
set -u
bench="$1"
tools="$(cd "$(dirname "$0")/../tools" && pwd)"
. "$(dirname "$0")/checks.sh"

shape="--batch 2 --heads 32 --topk 128 --pool 512"
for rep in 1 2; do
  for v in "t16:--tile 16" "t32:--tile 32"; do
    name="${v%%:*}"; args="${v#*:}"
    # shellcheck disable=SC2086
    "$bench" --device cpu $shape $args --threads 1 --samples 2 --warmup 0 >"$tmp/last.txt" 2>"$tmp/err.txt"
    tail -n 1 "$tmp/last.txt" | python3 "$tools/ab_line.py" "$name" "$rep" "$shape" "$tmp/ab.jsonl" >>"$tmp/ab.txt"
  done
done
check "ab_line.py prints one line per run" test "$(grep -c '^rep [12] ' "$tmp/ab.txt")" -eq 4
check "ab_line.py appends the lines with variant and rep" \
  python3 -c 'import json, sys; r = [json.loads(l) for l in open(sys.argv[1])]; sys.exit(not (len(r) == 4 and {x["variant"] for x in r} == {"t16", "t32"} and {x["rep"] for x in r} == {1, 2}))' "$tmp/ab.jsonl"
python3 "$tools/ab_summary.py" "$tmp/ab.jsonl" >"$tmp/summary.txt" 2>&1; rc=$?
check "ab_summary.py exits 0 (got $rc)" test "$rc" -eq 0
check "the summary names its baseline" grep -q 'against t16$' "$tmp/summary.txt"
check "one row per shape and variant" test "$(grep -c '^B=2 h=32 splits=' "$tmp/summary.txt")" -eq 2
check "the second variant is compared with the first" grep -Eq '^B=2 h=32 splits=[0-9]+ +t32 .* [+-][0-9.]+ us \([+-][0-9.]+%\), (every repetition below|every repetition above|ranges overlap)$' "$tmp/summary.txt"

# Known medians: b is below a in every repetition, c overlaps a, d is above.
python3 - "$tmp/known.jsonl" <<'PY'
import json, sys
rows = {"a": [10.0, 10.2, 10.1], "b": [9.5, 9.7, 9.6], "c": [10.15, 9.9, 10.3], "d": [11.0, 11.1, 10.9]}
with open(sys.argv[1], "w") as f:
    for v, us in rows.items():
        for rep, u in enumerate(us, 1):
            f.write(json.dumps({"variant": v, "rep": rep, "batch": 64, "heads": 32, "splits_used": 2, "median_us": u,
                                "roofline_frac": 21.5 / u, "rel_err": 1.67e-3, "corruption_pct": 0.0, "feasible": True}) + "\n")
PY
python3 "$tools/ab_summary.py" "$tmp/known.jsonl" >"$tmp/known.txt"
check "b: -0.50 us, every repetition below" grep -Eq '^B=64 h=32 splits=2 +b +9\.60 .* -0\.50 us \(-5\.0%\), every repetition below$' "$tmp/known.txt"
check "c: ranges overlap" grep -Eq ' c +10\.15 .*, ranges overlap$' "$tmp/known.txt"
check "d: every repetition above" grep -Eq ' d +11\.00 .* \+0\.90 us .*every repetition above$' "$tmp/known.txt"
check "a (the baseline) has no comparison" grep -Eq ' a +10\.10 +10\.00-10\.20 +2\.129 1\.67e-03 +0\.00 *$' "$tmp/known.txt"
: >"$tmp/empty.jsonl"
check "an empty file says so" test "$(python3 "$tools/ab_summary.py" "$tmp/empty.jsonl")" = "no result lines"

checks_done
