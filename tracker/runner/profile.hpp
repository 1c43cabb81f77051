#pragma once
// Reading `ncu:` metrics: the cell's command once more under Nsight Compute, after the timed
// invocations (so their times are never perturbed), with the counters the plan names.
#include <map>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "runner/run.hpp"
#include "util/process.hpp"

namespace abtrack::runner {

// The ncu command line for one profile: `ncu --csv --clock-control none --print-units base
// --target-processes all --metrics M1,M2 [-k regex:KERNEL] --launch-skip N --launch-count 1
// /bin/sh -c COMMAND`. abtrack never changes the GPU's settings, hence --clock-control none.
std::string ncu_command(const std::string& ncu, const std::vector<std::string>& ncu_metrics, const std::string& kernel,
                        int launch, const std::string& command);

// Runs `command` (with `spec`'s directory, environment and timeout) under ncu once per distinct
// (kernel, launch) of the ncu metrics in `metrics` (the cell's: plan::metrics_for), adds each
// value ncu gave to `samples` (scaled), and returns what each invocation did. A metric ncu gave
// no value for stays out of `samples` (the Profile says why); nothing here makes a run invalid.
// ncu is found by find_tool("ncu", "ABTRACK_NCU"). Throws Interrupted on SIGINT/SIGTERM.
std::vector<Profile> profile_cell(const std::vector<plan::Metric>& metrics, const std::string& command,
                                  const util::ProcessSpec& spec, Executor& executor,
                                  std::map<std::string, std::vector<double>>& samples);

}  // namespace abtrack::runner
