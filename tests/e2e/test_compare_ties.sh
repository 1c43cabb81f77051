#!/usr/bin/env bash
# `compare --samples` with few tied samples: the exact permutation distribution of U with
# midranks, so p never falls below the smallest p the note names (3 + 3: 0.1).
source "$(dirname "$0")/lib.sh"
new_repo
W=$WORK
printf '1\n1\n2\n' >"$W/a.txt"
printf '3\n3\n4\n' >"$W/b.txt"

step "3 + 3 tied samples, fully separated"
expect_rc 0 ab compare --samples "$W/a.txt" "$W/b.txt"
expect_contains "$OUT" "the smallest possible p is 0.1"
expect_contains "$OUT" "p=0.1 " "p is the floor the note names ($(cat "$OUT"))"
expect_not_contains "$OUT" "p=0.04"
expect_rc 0 ab compare --samples "$W/a.txt" "$W/b.txt" --json
expect_eq "$(json "$OUT" 'round(d["p_value"], 12)')" "0.1" "the exact p with ties"
expect_eq "$(json "$OUT" 'd["method"]')" "exact with ties"
expect_eq "$(json "$OUT" 'd["verdict"]')" "inconclusive"

step "5 + 5 with ties: the permutation p (brute force here)"
printf '10\n10\n11\n12\n12\n' >"$W/c.txt"
printf '12\n13\n13\n14\n14\n' >"$W/d.txt"
WANT=$("$PY" - "$W/c.txt" "$W/d.txt" <<'PY'
import itertools, sys
a = [float(x) for x in open(sys.argv[1]).read().split()]
b = [float(x) for x in open(sys.argv[2]).read().split()]
pool = a + b
srt = sorted(pool)
rank = {v: (srt.index(v) + 1 + len(srt) - srt[::-1].index(v)) / 2 for v in pool}
obs = sum(rank[v] for v in a)
sums = [sum(rank[pool[i]] for i in c) for c in itertools.combinations(range(len(pool)), len(a))]
le = sum(s <= obs + 1e-9 for s in sums); ge = sum(s >= obs - 1e-9 for s in sums)
print("%.10f" % min(1.0, 2 * min(le, ge) / len(sums)))
PY
)
expect_rc 0 ab compare --samples "$W/c.txt" "$W/d.txt" --json
expect_eq "$(json "$OUT" '"%.10f" % d["p_value"]')" "$WANT" "p equals the permutation test's"
done_testing
