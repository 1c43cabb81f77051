#!/usr/bin/env python3
"""Builds a git repository holding an abtrack experiment with N runs of history, one commit per
run (as abtrack makes them), quickly, through `git fast-import`, then repacked as `git gc` would
pack it. The records are realistic (20 samples per metric, gates, code identity). Used by
scripts/bench.sh.

usage: make_history.py REPO N
"""
import json, os, random, subprocess, sys

repo, n = sys.argv[1], int(sys.argv[2])
os.makedirs(repo, exist_ok=True)
subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
for k, v in (("user.name", "Bench"), ("user.email", "bench@example.com")):
    subprocess.run(["git", "-C", repo, "config", k, v], check=True)

plan = """experiment: bench
doc: BENCH_AB.md
axes:
  variant: [a, b, c, d]
  batch: [1, 2, 4, 8, 16]
baseline: {variant: a}
command: >-
  echo '{"t": [1, 2, 3], "err": 0}'
metrics:
  t: {json: t, better: lower, unit: us}
  err: {json: err}
gates: [err <= 0.01]
"""
doc = """# bench

<!-- abtrack:begin summary -->
<!-- abtrack:end summary -->

<!-- abtrack:begin results -->
<!-- abtrack:end results -->

<!-- abtrack:begin runs -->
<!-- abtrack:end runs -->
"""
rng = random.Random(1)
cells = [(v, b) for v in "abcd" for b in (1, 2, 4, 8, 16)]
out = []
def blob(data):
    data = data.encode()
    out.append(b"blob\nmark :%d\ndata %d\n" % (len(marks) + 1, len(data)) + data + b"\n")
    marks.append(1)
    return len(marks)
marks = []
t0 = 1700000000
def code_of(run):
    # The code changes every 20 runs (one sweep of the 20 cells per edit), as in real use.
    return f"{run // 20:040x}"

def commit(msg, files, when):
    m = msg.encode()
    body = b"commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s\n" % (when, len(m), m)
    for path, mark in files:
        body += b"M 100644 :%d %s\n" % (mark, path.encode())
    out.append(body)

commit("abtrack(bench): init\n\nAbtrack-Experiment: bench\n", [("abtrack.yaml", blob(plan)), ("BENCH_AB.md", blob(doc))], t0)
for run in range(1, n + 1):
    v, b = cells[(run - 1) % len(cells)]
    base = 100.0 * b * (1.0 if v == "a" else 0.9)
    samples = [base * (1 + rng.random() * 0.02) for _ in range(20)]
    rec = {
        "schema": 1, "experiment": "bench", "run": run, "cell": {"variant": v, "batch": b},
        "command": "echo", "source": "command", "started": "2026-11-30T00:00:00Z", "finished": "2026-11-30T00:00:01Z",
        "outcome": "pass", "reason": "", "setup": None,
        "invocations": [{"command": "echo", "exit_code": 0, "signal": None, "timed_out": False, "duration_s": 0.01,
                         "stdout_bytes": 400, "stderr_bytes": 0, "stdout_tail": json.dumps({"t": samples}), "stderr_tail": ""}],
        "metrics": {"t": {"samples": samples, "summary": {"n": 20}}, "err": {"samples": [0.0], "summary": {"n": 1}}},
        "gates": [{"expression": "err <= 0.01", "metric": "err", "evaluated": True, "holds": True, "worst": 0.0, "violations": 0}],
        "comparison": None, "code": {"commit": code_of(run), "dirty": False, "snapshot": None},
        "env": {"host": "bench", "os": "Linux", "cpu": "x", "cpus": 2, "gpus": [], "driver": "", "cuda": ""},
        "abtrack_version": "0.1.0", "plan_sha256": "0" * 64,
    }
    msg = (f"abtrack(bench): run {run} variant={v} batch={b}: pass\n\n"
           f"Abtrack-Experiment: bench\nAbtrack-Run: {run}\nAbtrack-Cell: variant={v} batch={b}\n"
           f"Abtrack-Outcome: pass\nAbtrack-Code: {code_of(run)}\n")
    commit(msg, [(f"runs/bench/{run:04d}.json", blob(json.dumps(rec, indent=2) + "\n"))], t0 + run)

subprocess.run(["git", "-C", repo, "fast-import", "--quiet"], input=b"".join(out), check=True)
# fast-import deltas each object against the previous version at its path, so the tip's trees
# (runs/<experiment>/ above all) end 30-deep delta chains: reading them costs 3x what it does in
# any repository written by steps (loose objects) or packed by git gc (whose heuristic makes the
# newest, largest version the base). Repacked from scratch, the history looks like the latter.
subprocess.run(["git", "-C", repo, "repack", "-a", "-d", "-f", "-q"], check=True)
subprocess.run(["git", "-C", repo, "checkout", "-q", "-f", "main"], check=True)
