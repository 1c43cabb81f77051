#!/usr/bin/env python3
"""Prints a table of mla_decode_bench result lines (JSON lines): one row per run."""
import json
import sys


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip().startswith("{")]
    print(f"{'B':>4} {'h':>4} {'w':>2} {'T':>3} {'S':>2} {'sp':>3} {'math':>4} {'dq':>4} "
          f"{'med_us':>8} {'roof':>6} {'frac':>5} {'rel_err':>8} {'corr%':>6} {'regs':>4} "
          f"{'smem':>6} {'cta':>3} {'wrp':>3} ok")
    for r in rows:
        if not r.get("feasible", True):
            print(f"{r['batch']:>4} {r['heads']:>4} {r['warps']:>2} {r['tile']:>3} {r['stages']:>2} "
                  f"{'':>3} {r['math']:>4} {r['dequant']:>4} infeasible: {r.get('why', '')[:60]}")
            continue
        print(f"{r['batch']:>4} {r['heads']:>4} {fmt(r['warps'], '>2')} {r['tile']:>3} "
              f"{fmt(r['stages'], '>2')} {fmt(r.get('splits_used'), '>3')} {fmt(r['math'], '>4')} "
              f"{fmt(r['dequant'], '>4')} {fmt(r['median_us'], '8.2f')} {fmt(r['roofline_us'], '6.2f')} "
              f"{fmt(r['roofline_frac'], '5.3f')} {fmt(r['rel_err'], '8.2e')} "
              f"{fmt(r['corruption_pct'], '6.2f')} {fmt(r['regs_per_thread'], '>4')} "
              f"{fmt(r['smem_bytes'], '>6')} {fmt(r['ctas_per_sm'], '>3')} {fmt(r['warps_per_sm'], '>3')} "
              f"{'yes' if r.get('check_passed') else 'NO'}")


if __name__ == "__main__":
    main(sys.argv[1])
