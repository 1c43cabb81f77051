#!/usr/bin/env python3
"""Reads one mla_decode_bench result line on stdin; appends it with its variant and repetition to
a JSON-lines file and prints a one-line summary. Usage: ab_line.py VARIANT REP SHAPE OUT.jsonl"""
import json
import sys


def main(variant, rep, shape, path):
    line = sys.stdin.read().strip()
    try:
        r = json.loads(line)
    except json.JSONDecodeError:
        print(f"rep {rep} {variant:>10} {shape}: no result line: {line[:120]}")
        return
    r["variant"], r["rep"] = variant, int(rep)
    with open(path, "a") as f:
        f.write(json.dumps(r) + "\n")
    if not r.get("feasible", True):
        print(f"rep {rep} {variant:>10} {shape}: infeasible: {r.get('why', '')}")
        return
    frac = r.get("roofline_frac")  # null on the CPU (no roofline there)
    print(f"rep {rep} {variant:>10} {shape}: {r['median_us']:8.2f} us  frac {'-' if frac is None else f'{frac:.3f}'}  "
          f"rel_err {r['rel_err']:.2e}  splits {r.get('splits_used')}  cluster {r.get('cluster')}  "
          f"ok {r.get('check_passed')}")


if __name__ == "__main__":
    main(*sys.argv[1:5])
