#!/usr/bin/env bash
# Metric sources beyond stdout: `file:` (read after each invocation, {axis} in the path), and
# the formats hyperfine:, gbench:, nvbench: with name:/state: and scale:, read from output that
# the real tools wrote (hyperfine and Google Benchmark run here; nvbench needs a GPU build, so
# its output is a fixture). A missing or stale file makes the run invalid; plan mistakes exit 2.
source "$(dirname "$0")/lib.sh"

# CI installs these (scripts/deps.sh); a missing tool is a failure, not a skip.
command -v hyperfine >/dev/null 2>&1 || die "hyperfine is not installed: apt-get install hyperfine (scripts/deps.sh lists it)"
command -v g++ >/dev/null 2>&1 || die "g++ is not installed: apt-get install g++"
[ -f /usr/include/benchmark/benchmark.h ] || die "Google Benchmark is not installed: apt-get install libbenchmark-dev (scripts/deps.sh lists it)"

rec() { printf 'runs/%s/%04d.json' "$EXP" "$1"; }
val() { json "$(rec "$1")" "$2"; }

step "hyperfine: --export-json file per cell, times scaled to microseconds"
new_repo hyperfine
EXP=hf
cat >abtrack.yaml <<'EOF2'
experiment: hf
doc: AB.md
axes:
  d: ['0.01', '0.02']
command: hyperfine -N --runs 5 --warmup 1 --export-json hf-{d}.json 'sleep '{d}
metrics:
  time_us: {hyperfine: times, file: 'hf-{d}.json', scale: 1e6, unit: us, better: lower}
  mean_s: {hyperfine: mean, name: '^sleep ', file: 'hf-{d}.json'}
gates:
  - time_us >= 9000
EOF2
printf 'hf-*.json\n' >.gitignore
git_commit_all "ignore outputs"
expect_rc 0 ab init
expect_rc 0 ab run
expect_eq "$(val 1 'd["outcome"]')" pass "run 1 passes"
expect_eq "$(val 1 'len(d["metrics"]["time_us"]["samples"])')" 5 "times: one sample per hyperfine run (--runs 5)"
expect_eq "$(val 1 'len(d["metrics"]["mean_s"]["samples"])')" 1 "mean: one sample per result"
expect_eq "$(val 1 'all(10000 <= s < 1000000 for s in d["metrics"]["time_us"]["samples"])')" true "sleep 0.01 takes >= 10000 us (scaled from seconds)"
expect_eq "$(val 2 'all(20000 <= s < 1000000 for s in d["metrics"]["time_us"]["samples"])')" true "sleep 0.02 read from hf-0.02.json (hyperfine -N: no shell start-up subtracted)"
expect_eq "$(val 1 'abs(d["metrics"]["mean_s"]["samples"][0] * 1e6 - sum(json.load(open("hf-0.01.json"))["results"][0]["times"]) / 5 * 1e6) < 1')" true "mean_s is hyperfine's own mean"
expect_eq "$(val 1 '[d["metrics"]["time_us"][k] for k in ("source", "selector", "file", "scale")]')" '["hyperfine", "times", "hf-{d}.json", 1000000.0]' "the record names format, field, file and scale"
expect_eq "$(val 1 'd["metrics"]["mean_s"]["name"]')" '^sleep ' "the record keeps the name regex"
expect_eq "$(val 1 '[d["metrics"]["mean_s"]["scale"], d["metrics"]["mean_s"]["unit"] if "unit" in d["metrics"]["mean_s"] else None]')" '[1.0, null]' "default scale 1"
expect_clean
expect_rc 0 ab verify

step "gbench: JSON on stdout and --benchmark_out file, iteration rows only"
mkdir -p "$WORK/gb" && cat >"$WORK/gb/bench.cpp" <<'EOF2'
#include <benchmark/benchmark.h>
static void BM_sum(benchmark::State& state) {
  long x = 0;
  for (auto _ : state)
    for (long i = 0; i < state.range(0); ++i) benchmark::DoNotOptimize(x += i);
  state.counters["items"] = benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_sum)->Arg(64)->Arg(256);
BENCHMARK_MAIN();
EOF2
g++ -O2 -std=c++17 "$WORK/gb/bench.cpp" -o "$WORK/gb/bench" -lbenchmark -lpthread >"$WORK/gb/build.log" 2>&1 \
  || { cat "$WORK/gb/build.log" >&2; die "cannot build a Google Benchmark program (libbenchmark-dev)"; }
new_repo gbench
EXP=gb
cat >abtrack.yaml <<EOF2
experiment: gb
doc: AB.md
axes:
  n: [64, 256]
command: $WORK/gb/bench --benchmark_filter='BM_sum/'{n}'\$' --benchmark_min_time=0.01 --benchmark_repetitions=3 --benchmark_format=json --benchmark_out=gb-{n}.json --benchmark_out_format=json
metrics:
  real_ns: {gbench: real_time, name: '^BM_sum/', better: lower}
  cpu_ns: {gbench: cpu_time, name: 'BM_sum', file: 'gb-{n}.json'}
  items_per_s: {gbench: items, name: 'BM_sum', scale: 1e-6, unit: M/s}
gates:
  - real_ns > 0
EOF2
printf 'gb-*.json\n' >.gitignore
git_commit_all "ignore outputs"
expect_rc 0 ab init
expect_rc 0 ab run
for r in 1 2; do
  expect_eq "$(val $r 'd["outcome"]')" pass "run $r passes"
  for m in real_ns cpu_ns items_per_s; do
    expect_eq "$(val $r "len(d['metrics']['$m']['samples'])")" 3 "run $r $m: one sample per repetition, aggregates left out"
  done
done
expect_eq "$(val 2 'sorted(d["metrics"]["cpu_ns"]["samples"]) == sorted(b["cpu_time"] for b in json.load(open("gb-256.json"))["benchmarks"] if b["run_type"] == "iteration")')" true "cpu_ns equals the file's iteration rows"
expect_eq "$(val 1 'all(abs(s * 1e6 - b["items"]) <= 1e-6 * b["items"] for s, b in zip(d["metrics"]["items_per_s"]["samples"], [b for b in json.load(open("gb-64.json"))["benchmarks"] if b["run_type"] == "iteration"]))')" true "a user counter, scaled"
expect_eq "$(val 1 '[d["metrics"]["cpu_ns"]["source"], d["metrics"]["cpu_ns"]["file"], d["metrics"]["real_ns"]["file"]]')" '["gbench", "gb-{n}.json", null]' "the record says file or stdout"

step "nvbench: JSON 1.0 output (fixture), a summary's value per state"
new_repo nvbench
EXP=nv
# nvbench needs CUDA to run, so this is what `bench --json -` prints, following nvbench's
# json_printer (JSON 1.0): the markdown log first, then devices, benchmarks[].states[] named by
# their axis values, summaries[] {tag, name, hint, description, hide, data[{name, type, value}]},
# numbers written as strings, a skipped state with its reason.
cat >nvbench.json <<'EOF2'
{
  "meta": {
    "argv": ["./bench", "--json", "-"],
    "version": {
      "json": {"major": 1, "minor": 0, "patch": 0, "string": "1.0.0"},
      "nvbench": {"major": 0, "minor": 1, "patch": 0, "string": "0.1.0", "git_branch": "main", "git_sha": "3c6e4b7", "git_version": "3c6e4b7", "git_is_dirty": false}
    }
  },
  "devices": [
    {"id": 0, "name": "NVIDIA H200", "sm_version": 900, "ptx_version": 900, "sm_default_clock_rate": 1980000000, "number_of_sms": 132,
     "max_blocks_per_sm": 32, "max_threads_per_sm": 2048, "max_threads_per_block": 1024, "registers_per_sm": 65536,
     "registers_per_block": 65536, "global_memory_size": 150109880320, "global_memory_bus_peak_clock_rate": 2619000000,
     "global_memory_bus_width": 6144, "global_memory_bus_bandwidth": 4022784000000, "l2_cache_size": 52428800,
     "shared_memory_per_sm": 233472, "shared_memory_per_block": 49152, "ecc_state": true}
  ],
  "benchmarks": [
    {
      "name": "mla_decode",
      "index": 0,
      "min_samples": 10,
      "min_time": 0.5,
      "max_noise": 0.005,
      "skip_time": -1.0,
      "timeout": 15.0,
      "devices": [0],
      "axes": [
        {"name": "Warps", "type": "int64", "flags": "", "values": [
          {"input_string": "4", "description": "", "value": 4},
          {"input_string": "8", "description": "", "value": 8},
          {"input_string": "16", "description": "", "value": 16}]}
      ],
      "states": [
        {
          "name": "Device=0 Warps=4",
          "min_samples": 10, "min_time": 0.5, "max_noise": 0.005, "skip_time": -1.0, "timeout": 15.0,
          "device": 0,
          "type_config_index": 0,
          "axis_values": [{"name": "Warps", "type": "int64", "value": "4"}],
          "summaries": [
            {"tag": "nv/cold/sample_size", "name": "Samples", "hint": "sample_size", "description": "Number of isolated kernel executions",
             "data": [{"name": "value", "type": "int64", "value": "11264"}]},
            {"tag": "nv/cold/time/gpu/mean", "name": "GPU Time", "hint": "duration", "description": "Mean isolated kernel execution time (measured with CUDA events)",
             "data": [{"name": "value", "type": "float64", "value": "4.7904e-05"}]},
            {"tag": "nv/cold/time/gpu/stdev/relative", "name": "Noise", "hint": "percentage", "description": "Relative standard deviation of isolated GPU times",
             "data": [{"name": "value", "type": "float64", "value": "0.00412"}]}
          ],
          "is_skipped": false
        },
        {
          "name": "Device=0 Warps=8",
          "min_samples": 10, "min_time": 0.5, "max_noise": 0.005, "skip_time": -1.0, "timeout": 15.0,
          "device": 0,
          "type_config_index": 0,
          "axis_values": [{"name": "Warps", "type": "int64", "value": "8"}],
          "summaries": [
            {"tag": "nv/cold/sample_size", "name": "Samples", "hint": "sample_size", "description": "Number of isolated kernel executions",
             "data": [{"name": "value", "type": "int64", "value": "12800"}]},
            {"tag": "nv/cold/time/gpu/mean", "name": "GPU Time", "hint": "duration", "description": "Mean isolated kernel execution time (measured with CUDA events)",
             "data": [{"name": "value", "type": "float64", "value": "4.1196e-05"}]},
            {"tag": "nv/cold/time/gpu/stdev/relative", "name": "Noise", "hint": "percentage", "description": "Relative standard deviation of isolated GPU times",
             "data": [{"name": "value", "type": "float64", "value": "0.00388"}]}
          ],
          "is_skipped": false
        },
        {
          "name": "Device=0 Warps=16",
          "min_samples": 10, "min_time": 0.5, "max_noise": 0.005, "skip_time": -1.0, "timeout": 15.0,
          "device": 0,
          "type_config_index": 0,
          "axis_values": [{"name": "Warps", "type": "int64", "value": "16"}],
          "summaries": [],
          "is_skipped": true,
          "skip_reason": "16 warps exceed the register budget"
        }
      ]
    }
  ]
}
EOF2
cat >abtrack.yaml <<'EOF2'
experiment: nv
doc: AB.md
axes:
  warps: [4, 8]
command: printf '# Devices\n\n## [0] `NVIDIA H200`\n'; cat nvbench.json; cp nvbench.json nv-{warps}.json
metrics:
  gpu_us: {nvbench: nv/cold/time/gpu/mean, state: 'Warps=8$', scale: 1e6, unit: us}
  samples: {nvbench: nv/cold/sample_size, file: 'nv-{warps}.json'}
EOF2
printf 'nv-*.json\n' >.gitignore
git_commit_all "fixture"
expect_rc 0 ab init
expect_rc 0 ab step
expect_eq "$(val 1 'd["outcome"]')" pass "nvbench run passes"
expect_eq "$(val 1 '[round(s, 9) for s in d["metrics"]["gpu_us"]["samples"]]')" '[41.196]' "the Warps=8 state's gpu mean, seconds to microseconds"
expect_eq "$(val 1 'd["metrics"]["samples"]["samples"]')" '[11264.0, 12800.0]' "one sample per state; the skipped state left out"
expect_eq "$(val 1 '[d["metrics"]["gpu_us"]["source"], d["metrics"]["gpu_us"]["selector"], d["metrics"]["gpu_us"]["state"]]')" '["nvbench", "nv/cold/time/gpu/mean", "Warps=8$"]' "the record names tag and state"

step "a missing or stale file makes the run invalid, naming the metric and the path"
new_repo files
EXP=files
cat >abtrack.yaml <<'EOF2'
experiment: files
doc: AB.md
axes:
  v: [a, b]
command: sh emit.sh {v}
metrics:
  t: {json: t}
  x: {json: x, file: 'out-{v}.json'}
EOF2
cat >emit.sh <<'EOF2'
echo '{"t": 1}'
if [ "$1" = a ]; then echo '{"x": [2, 3]}' >"out-$1.json"; fi
EOF2
printf 'out-*.json\n' >.gitignore
expect_rc 0 ab init
expect_rc 0 ab step --cell v=a
expect_eq "$(val 1 'd["metrics"]["x"]["samples"]')" '[2.0, 3.0]' "json: applies to the file's text"
expect_rc 1 ab step --cell v=b
expect_eq "$(val 2 'd["outcome"]')" invalid "no file: invalid"
expect_contains "$(val 2 'd["reason"]')" "metric 'x': file 'out-b.json' not found"
# out-a.json is still there from run 1; a command that does not rewrite it must not pass it off as its own.
echo 'echo "{\"t\": 1}"' >emit.sh
git_commit_all "stop writing"
expect_rc 1 ab step --cell v=a
expect_eq "$(val 3 'd["outcome"]')" invalid "a stale file: invalid"
expect_contains "$(val 3 'd["reason"]')" "metric 'x': file 'out-a.json' was not written by the command"

step "plan mistakes in metric sources: exit 2, all reported with positions"
new_repo errors
cat >abtrack.yaml <<'EOF2'
experiment: errors
doc: AB.md
axes: {v: [1]}
command: 'true'
metrics:
  a: {hyperfine: average, file: a.json}
  b: {gbench: real_time, nvbench: nv/cold/time/gpu/mean}
  c: {nvbench: nv/cold/time/gpu/mean, state: '(', scale: 0}
  d: {json: t, fille: d.json}
EOF2
expect_rc 2 ab init
expect_contains "$ERR" "abtrack: error: abtrack.yaml:6:18: metric 'a': hyperfine field 'average' is not one of mean, median, min, max, stddev, times"
expect_contains "$ERR" "abtrack: error: abtrack.yaml:7:26: metric 'b' has more than one source ('gbench' and 'nvbench'); give exactly one"
expect_contains "$ERR" "abtrack: error: abtrack.yaml:8:46: the state regex of metric 'c' does not compile"
expect_contains "$ERR" "abtrack: error: abtrack.yaml:8:58: metric 'c': scale must be a finite non-zero number, not 0"
expect_contains "$ERR" "abtrack: error: abtrack.yaml:9:16: unknown metric key 'fille', did you mean 'file'?"
expect_eq "$(git rev-list --all --count)" 0 "nothing committed"

done_testing
