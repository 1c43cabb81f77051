#!/usr/bin/env python3
"""Independent reference values for tracker/stats, from scipy/numpy (Debian: python3-scipy).

Usage: stats_oracle.py CASES_FILE
Each line of CASES_FILE is one case; each output line answers the case on the same line, as
space-separated floats (repr, so no precision is lost; inf/nan as 'inf'/'nan'):

  mwu METHOD N1 a... N2 b...   -> p        scipy.stats.mannwhitneyu(a, b, two-sided, METHOD,
                                            use_continuity=True); METHOD exact|asymptotic
  medianci N CONF              -> lo hi coverage   the rule of docs/statistics.md on
                                            scipy.stats.binom.pmf; coverage from binom.cdf;
                                            "0 0 1" when the interval is unbounded
  quantile Q N x...            -> q        numpy.quantile(x, Q, method='median_unbiased') (R8)
  hl CONF N1 a... N2 b...      -> shift lo hi      brute force over all n1*n2 log differences;
                                            Moses interval with z = 1.96 at 0.95 else norm.ppf
  holm M p...                  -> adj...   Holm-Bonferroni by the textbook loop; nan stays nan
  linfit N x... y...           -> intercept slope se_intercept se_slope r2   scipy.stats.linregress
  normppf P                    -> z        scipy.stats.norm.ppf(P)
"""
import math
import sys

import numpy as np
from scipy import stats


def take(tokens, i):
    n = int(tokens[i])
    return [float(t) for t in tokens[i + 1:i + 1 + n]], i + 1 + n


def mwu(tokens):
    method = tokens[1]
    a, i = take(tokens, 2)
    b, _ = take(tokens, i)
    res = stats.mannwhitneyu(a, b, alternative='two-sided', method=method, use_continuity=True)
    return [float(res.pvalue)]


def medianci(tokens):
    n, conf = int(tokens[1]), float(tokens[2])
    dist = stats.binom(n, 0.5)
    lo = hi = (n - 1) // 2 if n % 2 else n // 2  # the mode; of two modes the left one
    covered = dist.pmf(lo)
    while covered < conf and (lo > 0 or hi < n):
        left = dist.pmf(lo - 1) if lo > 0 else -1.0
        right = dist.pmf(hi + 1) if hi < n else -1.0
        if left >= right * (1 - 1e-12):  # symmetric neighbours tie: take the left one
            lo -= 1
            covered += left
        else:
            hi += 1
            covered += right
    if lo == 0 or hi == n:
        return [0, 0, 1.0]
    # [x(lo), x(hi+1)] covers the median when lo <= K <= hi.
    return [lo, hi + 1, float(dist.cdf(hi) - dist.cdf(lo - 1))]


def quantile(tokens):
    q = float(tokens[1])
    x, _ = take(tokens, 2)
    return [float(np.quantile(np.array(x), q, method='median_unbiased'))]


def hl(tokens):
    conf = float(tokens[1])
    a, i = take(tokens, 2)
    b, _ = take(tokens, i)
    d = np.sort((np.log(np.array(b))[None, :] - np.log(np.array(a))[:, None]).ravel())
    m, n = len(d), len(a) + len(b)
    shift = float(np.median(d))
    z = 1.96 if conf == 0.95 else float(stats.norm.ppf((1 + conf) / 2))
    c = m / 2 - z * math.sqrt(m * (n + 1) / 12)
    c = math.floor(c + 0.5) if c >= 0 else -math.floor(-c + 0.5)  # half away from zero
    if c < 1:
        return [shift, -math.inf, math.inf]
    return [shift, float(d[c - 1]), float(d[m - c])]


def holm(tokens):
    p, _ = take(tokens, 1)
    idx = sorted((i for i in range(len(p)) if not math.isnan(p[i])), key=lambda i: p[i])
    m = len(idx)
    out = [math.nan] * len(p)
    prev = 0.0
    for rank, i in enumerate(idx):
        prev = max(prev, min(1.0, (m - rank) * p[i]))
        out[i] = prev
    return out


def linfit(tokens):
    n = int(tokens[1])
    x = [float(t) for t in tokens[2:2 + n]]
    y = [float(t) for t in tokens[2 + n:2 + 2 * n]]
    r = stats.linregress(x, y)
    return [r.intercept, r.slope, r.intercept_stderr, r.stderr, r.rvalue ** 2]


def normppf(tokens):
    return [float(stats.norm.ppf(float(tokens[1])))]


HANDLERS = {'mwu': mwu, 'medianci': medianci, 'quantile': quantile, 'hl': hl, 'holm': holm,
            'linfit': linfit, 'normppf': normppf}


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            tokens = line.split()
            if not tokens:
                continue
            print(' '.join(repr(float(v)) for v in HANDLERS[tokens[0]](tokens)))


if __name__ == '__main__':
    main()
