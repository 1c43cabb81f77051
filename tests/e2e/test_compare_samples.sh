#!/usr/bin/env bash
# `abtrack compare --samples`: the verdicts that bad or thin data deserve, never an invented p.
source "$(dirname "$0")/lib.sh"
new_repo
W=$WORK
printf '10\n' >"$W/one_a.txt"; printf '11\n' >"$W/one_b.txt"
for i in $(seq 1 12); do echo 5; done >"$W/eq_a.txt"; cp "$W/eq_a.txt" "$W/eq_b.txt"
python3 - "$W" <<'PY'
import random, sys
d = sys.argv[1]
r = random.Random(3)
open(f"{d}/noise_a.txt", "w").write("".join(f"{100 + r.gauss(0, 1):.4f}\n" for _ in range(20)))
open(f"{d}/noise_b.txt", "w").write("".join(f"{100 + r.gauss(0, 1):.4f}\n" for _ in range(20)))
open(f"{d}/fast_b.txt", "w").write("".join(f"{97 + r.gauss(0, 1):.4f}\n" for _ in range(20)))
PY

expect_rc 0 ab compare --samples "$W/one_a.txt" "$W/one_b.txt" --json
expect_eq "$(json "$OUT" 'd["verdict"]')" inconclusive "one sample per side is inconclusive"
expect_eq "$(json "$OUT" 'd["p_value"] is None or d["p_value"] >= 1')" true "1+1 samples: the exact test cannot reject (p is 1 or undefined)"

expect_rc 0 ab compare --samples "$W/eq_a.txt" "$W/eq_b.txt" --json
expect_eq "$(json "$OUT" 'd["verdict"]')" same "all-equal samples on both sides: the exact change, no change"
expect_eq "$(json "$OUT" 'd["exact"]')" true "marked exact"
expect_eq "$(json "$OUT" 'd["p_value"] is None')" true "all-equal samples have no p-value"

expect_rc 0 ab compare --samples "$W/noise_a.txt" "$W/fast_b.txt" --json
expect_eq "$(json "$OUT" 'd["verdict"]')" better "a 3% speed-up under 1% noise is better"
expect_eq "$(json "$OUT" 'd["delta_ci_pct"][0] < -2 and d["delta_ci_pct"][1] < 0')" true "its CI lies below zero"

expect_rc 0 ab compare --samples "$W/noise_a.txt" "$W/noise_b.txt"
expect_match "$OUT" '  ~  ' "the text form prints ~ for same ($OUT)"
expect_rc 2 ab compare --samples "$W/noise_a.txt" "$W/fast_b.txt" --alpha 2
expect_contains "$ERR" "alpha"
done_testing
