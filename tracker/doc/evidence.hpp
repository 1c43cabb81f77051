#pragma once
// The document's evidence: per compared cell, what changed against its baseline cell besides the
// time: the compiled code (artifacts' CUDA facts), the ncu counters and what the NVML watcher saw
// (clocks, power, utilisation, throttling). Pure functions over records.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "record/compare.hpp"

namespace abtrack::doc {

// What differs between two facts of one artifact path, kernel by kernel (name and arch):
// "`crowded`: regs 32 → 40, spill stores 268 → 0 B, STL 84 → 0; `tidy`: only in the baseline";
// "" when nothing differs. `profiled_base` and `profiled_variant`: the kernels ncu profiled in
// each arm's run, as ncu names them; when each names one kernel of its side's facts and the two
// are different kernels (two implementations of one operation), their facts come first,
// "profiled `theirs<64>` → `ours<1, 8>`: smem 0 → 1024 B, WGMMA 96 → 64", and the kernels
// found on one side only are counted rather than listed.
std::string code_changes(const runner::CudaFacts& base, const runner::CudaFacts& variant,
                         const std::vector<std::string>& profiled_base = {},
                         const std::vector<std::string>& profiled_variant = {});

// The plan's ncu metrics, baseline → variant, from each arm's samples (pooled medians), in a
// fixed order: per `ncu: occupancy` set (in the set's order, short names: "regs 168 → 128,
// CTAs/SM 1 → 2, limit: registers → shared memory, warps active 11.6% → 18.7%, DRAM 27.0% →
// 36.0%") then the other ncu metrics in plan order under their own names. A set's CTAs per SM
// (the smallest of its limit_* values) and which limits bind (all that tie for it) are always
// shown; every other counter only when its medians differ by at least kEvidenceMinChangePct of the
// larger one. "" when no ncu metric has a value in either arm.
inline constexpr double kEvidenceMinChangePct = 2;
std::string counter_changes(const plan::Plan& plan, const std::map<std::string, std::vector<double>>& base,
                            const std::map<std::string, std::vector<double>>& variant);

// What the watcher saw over a pool's runs (not the invalid ones): the medians over their
// invocations' watched GPUs of the busy samples' SM clock, power draw and GPU utilisation (each
// unset when no GPU was busy, and power and utilisation in records written before they were
// kept), and the throttle reasons seen while busy. Unset without an NVML watch.
struct WatchSummary {
  std::optional<double> sm_clock_mhz, power_w, gpu_util_pct;
  std::vector<std::string> throttle;  // runner::merge_throttle's order
};
std::optional<WatchSummary> watch_summary(const std::vector<const record::Record*>& pool);

// "SM 1980 → 1755 MHz, power 650 → 700 W, GPU util 35 → 40%, throttled: none → sw_power_cap";
// a quantity only when an arm has it, throttling only when an arm was throttled; "" when neither
// arm was watched.
std::string watch_changes(const std::optional<WatchSummary>& base, const std::optional<WatchSummary>& variant);

// The summary's evidence: one bullet per compared cell (a cell whose baseline cell has a run)
// with anything to show, "- **warps=8 batch=64** vs warps=4: build/k-8.cubin: decode: regs 168 →
// 128; ncu: ...; NVML: ...", under a heading that states the rules; "" when no cell has any (a
// plan without CUDA artifacts, ncu metrics and NVML watches). A pair of binaries already shown
// for an earlier cell is named, not repeated.
std::string evidence(const plan::Plan& plan, const std::vector<record::CellRuns>& cells);

}  // namespace abtrack::doc
