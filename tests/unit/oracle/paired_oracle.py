#!/usr/bin/env python3
"""Independent reference values for tracker/stats/paired.*, from scipy/numpy (python3-scipy).

Usage: paired_oracle.py CASES_FILE
Each line of CASES_FILE is one case; each output line answers the case on the same line, as
space-separated floats (repr; inf/nan as 'inf'/'nan'):

  wilcoxon METHOD N d...      -> T p   scipy.stats.wilcoxon(d, zero_method='wilcox',
                                       correction=True, two-sided, METHOD); METHOD exact|approx
                                       (scipy >= 1.15 calls approx 'asymptotic'); T = min(W+, W-)
  signflip N d...             -> p     brute force: zeros dropped, midranks of |d|, each of the
                                       2^n sign patterns equally likely, p = min(1, 2 min(P(W+' <=
                                       W+), P(W+' >= W+))); pure Python, keep n <= 16
  paired CONF R {NA a... NB b...} x R  -> delta lo hi p   per round d = ln(median(b)/median(a))
                                       (numpy), delta = (exp(median(d)) - 1) * 100, [lo, hi] the
                                       binomial median CI of d (stats_oracle.medianci) mapped the
                                       same way (inf when unbounded), p = scipy.stats.wilcoxon(d)
                                       exact (n <= 50, cases without ties or zeros) else approx
"""
import itertools
import math
import sys

import numpy as np
from scipy import stats

from stats_oracle import medianci


def take(tokens, i):
    n = int(tokens[i])
    return [float(t) for t in tokens[i + 1:i + 1 + n]], i + 1 + n


def scipy_wilcoxon(d, method):
    if method == 'approx':
        try:
            return stats.wilcoxon(d, zero_method='wilcox', correction=True, alternative='two-sided',
                                  method='approx')
        except ValueError:  # newer scipy: the method is named 'asymptotic'
            method = 'asymptotic'
    return stats.wilcoxon(d, zero_method='wilcox', correction=True, alternative='two-sided', method=method)


def wilcoxon(tokens):
    d, _ = take(tokens, 2)
    res = scipy_wilcoxon(d, tokens[1])
    return [float(res.statistic), float(res.pvalue)]


def midranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and values[order[j]] == values[order[i]]:
            j += 1
        for k in range(i, j):
            ranks[order[k]] = (i + 1 + j) / 2
        i = j
    return ranks


def signflip(tokens):
    d, _ = take(tokens, 1)
    d = [x for x in d if x != 0]
    ranks = midranks([abs(x) for x in d])
    doubled = [round(2 * r) for r in ranks]
    observed = sum(r for r, x in zip(doubled, d) if x > 0)
    le = ge = total = 0
    for signs in itertools.product((0, 1), repeat=len(d)):
        w = sum(r for r, s in zip(doubled, signs) if s)
        total += 1
        le += w <= observed
        ge += w >= observed
    return [min(1.0, 2 * min(le, ge) / total)]


def paired(tokens):
    conf, rounds = float(tokens[1]), int(tokens[2])
    i = 3
    d = []
    for _ in range(rounds):
        a, i = take(tokens, i)
        b, i = take(tokens, i)
        d.append(math.log(float(np.median(b)) / float(np.median(a))))
    delta = math.expm1(float(np.median(d))) * 100
    lo, hi, _ = medianci(['medianci', str(len(d)), repr(conf)])
    if lo == 0:
        lo_pct, hi_pct = -math.inf, math.inf
    else:
        s = sorted(d)
        lo_pct, hi_pct = math.expm1(s[lo - 1]) * 100, math.expm1(s[hi - 1]) * 100
    p = float(scipy_wilcoxon(d, 'exact' if len(d) <= 50 else 'approx').pvalue)
    return [delta, lo_pct, hi_pct, p]


HANDLERS = {'wilcoxon': wilcoxon, 'signflip': signflip, 'paired': paired}


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            tokens = line.split()
            if tokens:
                print(' '.join(repr(float(v)) for v in HANDLERS[tokens[0]](tokens)))


if __name__ == '__main__':
    main()
