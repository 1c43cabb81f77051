#!/usr/bin/env python3
"""Summarizes tools/ab.sh's ab.jsonl: per shape and variant the median of the repetitions'
medians, their range, roofline_frac, the worst rel_err and corruption, and against the first
variant (the baseline) the difference and whether every repetition was below (or above) every
one of the baseline's. Usage: ab_summary.py ab.jsonl"""
import collections
import json
import signal
import statistics
import sys


def main(path):
    runs = collections.defaultdict(list)  # (shape, variant) -> result lines
    shapes, variants = [], []
    for line in open(path):
        r = json.loads(line)
        if not r.get("feasible", True) or r.get("median_us") is None:
            continue
        shape = f"B={r['batch']} h={r['heads']} splits={r.get('splits_used')}"
        if shape not in shapes:
            shapes.append(shape)
        if r["variant"] not in variants:
            variants.append(r["variant"])
        runs[(shape, r["variant"])].append(r)
    if not variants:
        print("no result lines")
        return
    base = variants[0]
    print(f"{'shape':<24} {'variant':>10} {'median us':>10} {'range':>15} {'frac':>6} {'rel_err':>8} "
          f"{'corr%':>6}  against {base}")
    for shape in shapes:
        ref = [r["median_us"] for r in runs.get((shape, base), [])]
        for v in variants:
            rs = runs.get((shape, v), [])
            if not rs:
                continue
            us = [r["median_us"] for r in rs]
            med = statistics.median(us)
            fracs = [r["roofline_frac"] for r in rs if r.get("roofline_frac") is not None]  # none on the CPU
            frac = f"{statistics.median(fracs):6.3f}" if fracs else f"{'-':>6}"
            worst_err = max(r["rel_err"] for r in rs)
            worst_corr = max(r["corruption_pct"] for r in rs)
            versus = ""
            if v != base and ref:
                diff = med - statistics.median(ref)
                order = ("every repetition below" if max(us) < min(ref) else
                         "every repetition above" if min(us) > max(ref) else "ranges overlap")
                versus = f"{diff:+.2f} us ({100 * diff / statistics.median(ref):+.1f}%), {order}"
            print(f"{shape:<24} {v:>10} {med:10.2f} {min(us):7.2f}-{max(us):<7.2f} {frac} "
                  f"{worst_err:8.2e} {worst_corr:6.2f}  {versus}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    main(sys.argv[1])
