#!/usr/bin/env python3
"""The Mann-Whitney U test with ties by brute force: every assignment of the pooled values.

Usage: permutation_oracle.py CASES_FILE
Each line of CASES_FILE is one case; each output line answers the case on the same line
(repr floats):

  mwuperm N1 a... N2 b...   -> p   the two-sided permutation p of U1 with midranks: each of the
                                   C(N, n1) ways to pick A's values from the pool equally likely,
                                   p = min(1, 2 min(P(U1' <= U1), P(U1' >= U1)))

Pure Python (itertools.combinations), no scipy: scipy's mannwhitneyu(method='exact') has no
ties, so it cannot be the reference here. Keep N small (C(16, 8) = 12870 assignments).
"""
import itertools
import sys


def midranks(pooled):
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and pooled[order[j]] == pooled[order[i]]:
            j += 1
        for k in range(i, j):
            ranks[order[k]] = (i + 1 + j) / 2  # positions i+1 .. j share their mean
        i = j
    return ranks


def mwuperm(tokens):
    n1 = int(tokens[1])
    a = [float(t) for t in tokens[2:2 + n1]]
    n2 = int(tokens[2 + n1])
    b = [float(t) for t in tokens[3 + n1:3 + n1 + n2]]
    pooled = a + b
    ranks = midranks(pooled)
    # Doubled rank sums are integers: compared exactly.
    observed = round(2 * sum(ranks[:n1]))
    le = ge = total = 0
    for chosen in itertools.combinations(range(len(pooled)), n1):
        r = round(2 * sum(ranks[i] for i in chosen))
        total += 1
        le += r <= observed
        ge += r >= observed
    return [min(1.0, 2 * min(le, ge) / total)]


HANDLERS = {'mwuperm': mwuperm}


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            tokens = line.split()
            if tokens:
                print(' '.join(repr(float(v)) for v in HANDLERS[tokens[0]](tokens)))


if __name__ == '__main__':
    main()
