#!/usr/bin/env python3
"""Times several commands interleaved: every round runs each command once, in a freshly shuffled
order, so drift on a noisy machine (other tenants, CPU frequency, page cache) hits all of them
alike. Ratios are taken within a round and summarised by their median with a distribution-free
95% confidence interval (order statistics of the binomial), which is what the step targets in
docs/PERFORMANCE.md are read from. Used by scripts/bench.sh.

usage: paired.py --rounds N [--warmup W] [--seed S] [--reset-git] --json OUT
                 NAME=DIR::COMMAND ...  RATIO=NAME/NAME ...

Each NAME=DIR::COMMAND runs COMMAND (split like a shell would, no shell started) with DIR as the
working directory; each RATIO=A/B reports A's time over B's, round by round. With --reset-git,
every DIR is put back (`git reset --hard`, untimed) to the commit it had at the start after each
timed command, so a history of N runs stays N runs however many rounds are timed. Prints a
Markdown table; OUT gets every sample.
"""
import argparse
import json
import math
import random
import shlex
import statistics
import subprocess
import sys
import time


def median_ci(values, level=0.95):
    """The sample median and a distribution-free CI from order statistics (binomial, p = 1/2)."""
    xs = sorted(values)
    n = len(xs)
    med = statistics.median(xs)
    if n < 6:
        return med, xs[0], xs[-1]
    # Largest k with P(Binomial(n, 1/2) < k) <= (1 - level) / 2: the CI is [x_(k), x_(n-k+1)].
    alpha = (1 - level) / 2
    cdf, k = 0.0, 0
    while True:
        nxt = cdf + math.comb(n, k) / 2**n
        if nxt > alpha:
            break
        cdf, k = nxt, k + 1
    k = max(k, 1)
    return med, xs[k - 1], xs[n - k]


def run_once(cwd, argv):
    start = time.perf_counter_ns()
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if done.returncode != 0:
        sys.exit(f"paired.py: `{shlex.join(argv)}` in {cwd} exited {done.returncode}: "
                 f"{done.stderr.decode(errors='replace').strip()[:400]}")
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reset-git", action="store_true")
    ap.add_argument("--json", required=True)
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()

    commands, ratios = {}, []
    for spec in args.specs:
        name, _, rest = spec.partition("=")
        if "::" in rest:
            cwd, _, cmd = rest.partition("::")
            commands[name] = (cwd, shlex.split(cmd))
        elif "/" in rest:
            a, _, b = rest.partition("/")
            ratios.append((name, a, b))
        else:
            sys.exit(f"paired.py: cannot read `{spec}` (NAME=DIR::COMMAND or RATIO=A/B)")
    for name, a, b in ratios:
        for c in (a, b):
            if c not in commands:
                sys.exit(f"paired.py: ratio {name} names an unknown command `{c}`")

    base = {}
    if args.reset_git:
        for cwd, _ in commands.values():
            base[cwd] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, check=True,
                                       capture_output=True, text=True).stdout.strip()

    rng = random.Random(args.seed)
    names = list(commands)
    samples = {n: [] for n in names}
    for r in range(args.warmup + args.rounds):
        order = names[:]
        rng.shuffle(order)
        for n in order:
            t = run_once(*commands[n])
            cwd = commands[n][0]
            if cwd in base:
                subprocess.run(["git", "reset", "-q", "--hard", base[cwd]], cwd=cwd, check=True)
            if r >= args.warmup:
                samples[n].append(t)

    print("| command | median ms [95% CI] |\n| --- | ---: |")
    for n in names:
        m, lo, hi = median_ci(samples[n])
        print(f"| {n} | {m:.1f} [{lo:.1f}, {hi:.1f}] |")
    print("\n| ratio (within a round) | median [95% CI] |\n| --- | ---: |")
    summary = {}
    for name, a, b in ratios:
        rs = [x / y for x, y in zip(samples[a], samples[b])]
        m, lo, hi = median_ci(rs)
        summary[name] = {"median": m, "ci": [lo, hi], "of": [a, b]}
        print(f"| {name}: {a} / {b} | {m:.2f}x [{lo:.2f}, {hi:.2f}] |")
    with open(args.json, "w") as f:
        json.dump({"rounds": args.rounds, "warmup": args.warmup, "seed": args.seed,
                   "samples_ms": samples, "ratios": summary}, f, indent=1)


if __name__ == "__main__":
    main()
