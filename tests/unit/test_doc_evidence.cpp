#include <doctest/doctest.h>

#include <filesystem>

#include "doc/evidence.hpp"
#include "doc/render.hpp"
#include "plan/load.hpp"

using namespace abtrack;

namespace {

plan::Plan evidence_plan(const std::string& extra_metrics, const std::string& extra = "") {
  return plan::parse_plan(
      "experiment: occ\ndoc: AB.md\naxes: {warps: [4, 8], batch: [16, 64]}\nbaseline: {warps: 4}\n"
      "command: bench\nmetrics:\n  t: {json: t, better: lower, unit: us}\n" +
          extra_metrics + extra,
      "abtrack.yaml", std::filesystem::temp_directory_path());
}

constexpr const char* kOccupancy = "  occ: {ncu: occupancy, kernel: decode}\n";

record::Record make_record(const plan::Plan& p, int run, const plan::Cell& cell,
                           std::map<std::string, std::vector<double>> samples) {
  record::Record r;
  r.experiment = p.experiment;
  r.run = run;
  r.cell = record::cell_values(p, cell);
  r.data.samples = std::move(samples);
  r.data.samples["t"] = {10, 11, 12};
  r.data.outcome = runner::Outcome::pass;
  r.code.commit = std::string(40, 'a');
  return r;
}

// The occupancy set's values of one arm: the limits (registers, shared memory, warps, blocks).
std::map<std::string, std::vector<double>> occupancy(double regs, std::array<double, 4> limits, double achieved,
                                                     double dram, double stall_short) {
  return {{"occ_regs", {regs}},
          {"occ_smem_static", {0}},
          {"occ_smem_dynamic", {43008}},
          {"occ_limit_regs", {limits[0]}},
          {"occ_limit_smem", {limits[1]}},
          {"occ_limit_warps", {limits[2]}},
          {"occ_limit_blocks", {limits[3]}},
          {"occ_theoretical", {12.5}},
          {"occ_achieved", {achieved}},
          {"occ_dram", {dram}},
          {"occ_stall_short_sb", {stall_short}}};
}

runner::Invocation watched(double clock, double power, double util, std::vector<std::string> throttle = {}) {
  runner::Invocation inv;
  runner::Watch w;
  w.nvml = true;
  runner::GpuWatch g;
  g.samples = 10;
  g.busy = 5;
  g.busy_sm_clock_mhz = clock;
  g.busy_power_w = power;
  g.busy_gpu_util_pct = util;
  // Over every sample, idle ones included: not what the evidence shows.
  g.power_w = runner::Range{80, 90, power + 10};
  g.gpu_util_pct = runner::Range{0, 0, 100};
  g.throttle = std::move(throttle);
  w.gpus.push_back(g);
  inv.watch = w;
  return inv;
}

runner::CudaFacts facts(std::int64_t regs, std::int64_t stl) {
  runner::CudaFacts f;
  f.kind = "cubin";
  metrics::KernelFacts k;
  k.name = "_Z6decodePKfPfi";
  k.arch = "sm_90a";
  k.registers = regs;
  k.sass = {{"total", 100 + stl}, {"local_store", stl}};
  f.kernels.push_back(k);
  return f;
}

}  // namespace

TEST_CASE("counter_changes: the occupancy set by short names, the binding limit always, small changes left out") {
  auto p = evidence_plan(kOccupancy);
  auto base = occupancy(225, {1, 1, 16, 32}, 11.6, 28.5, 0.89);
  auto variant = occupancy(123, {2, 2, 8, 32}, 22.7, 28.4, 1.64);
  CHECK(
      doc::counter_changes(p, base, variant) ==
      "ncu: regs 225 → 123, CTAs/SM 1 → 2, limit: registers+shared memory → registers+shared memory, warps active 11.6% → "
      "22.7%, short-scoreboard stall 0.89 → 1.64");
  // A changed binding limit; a DRAM change of 2% or more is shown, with its unit.
  variant = occupancy(123, {3, 2, 8, 32}, 22.7, 36, 0.89);
  CHECK(
      doc::counter_changes(p, base, variant) ==
      "ncu: regs 225 → 123, CTAs/SM 1 → 2, limit: registers+shared memory → shared memory, warps active 11.6% → 22.7%, "
      "DRAM 28.5% → 36.0%");
  // Nothing changed: the occupancy answer alone.
  CHECK(doc::counter_changes(p, base, base) ==
        "ncu: CTAs/SM 1 → 1, limit: registers+shared memory → registers+shared memory");
  // A metric one arm lacks.
  auto partial = base;
  partial.erase("occ_regs");
  CHECK(doc::counter_changes(p, base, partial).starts_with("ncu: regs 225 → ?, CTAs/SM 1 → 1"));
  // No ncu value on either side.
  CHECK(doc::counter_changes(p, {{"t", {1}}}, {{"t", {2}}}).empty());
}

TEST_CASE("counter_changes: other ncu metrics under their own names, pooled medians, plan order") {
  auto p = evidence_plan(
      "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed, unit: '%'}\n"
      "  bytes: {ncu: dram__bytes.sum, unit: B}\n  same: {ncu: sm__cycles_elapsed.avg}\n");
  std::map<std::string, std::vector<double>> base{{"dram_pct", {20, 21, 22}}, {"bytes", {1000}}, {"same", {100}}};
  std::map<std::string, std::vector<double>> variant{{"dram_pct", {50, 51, 49}}, {"bytes", {4000}}, {"same", {101}}};
  CHECK(doc::counter_changes(p, base, variant) == "ncu: dram_pct 21 → 50%, bytes 1000 → 4000 B");
  // With a set: its items, then the others in the same part.
  auto q = evidence_plan(std::string(kOccupancy) +
                         "  dram_pct: {ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed}\n");
  auto b = occupancy(128, {1, 2, 16, 32}, 12, 30, 1);
  auto v = occupancy(128, {1, 2, 16, 32}, 12, 30, 1);
  b["dram_pct"] = {10};
  v["dram_pct"] = {20};
  CHECK(doc::counter_changes(q, b, v) == "ncu: CTAs/SM 1 → 1, limit: registers → registers, dram_pct 10 → 20");
}

TEST_CASE("counter_changes: two occupancy sets are named") {
  auto p = evidence_plan("  ours: {ncu: occupancy, kernel: decode}\n  theirs: {ncu: occupancy, kernel: flash}\n");
  std::map<std::string, std::vector<double>> b, v;
  for (const char* set : {"ours", "theirs"})
    for (auto [k, x, y] : {std::tuple{"regs", 168.0, 128.0}, {"limit_regs", 1.0, 2.0}, {"limit_smem", 2.0, 1.0}}) {
      b[std::string(set) + "_" + k] = {x};
      v[std::string(set) + "_" + k] = {y};
    }
  CHECK(
      doc::counter_changes(p, b, v) ==
      "ncu ours: regs 168 → 128, CTAs/SM 1 → 1, limit: registers → shared memory; ncu theirs: regs 168 → 128, CTAs/SM 1 → 1, "
      "limit: registers → shared memory");
}

TEST_CASE("watch_summary and watch_changes: medians over the pool's invocations, throttling when any") {
  auto p = evidence_plan("");
  auto cells = p.cells();
  auto a = make_record(p, 1, cells[0], {});
  a.data.invocations = {watched(1980, 120, 90), watched(1980, 130.0004, 95), watched(1755, 140, 99)};
  auto b = make_record(p, 2, cells[1], {});
  b.data.invocations = {watched(1500, 700, 35, {"sw_power_cap"})};
  auto invalid = make_record(p, 3, cells[1], {});
  invalid.data.outcome = runner::Outcome::invalid;
  invalid.data.invocations = {watched(100, 1, 1, {"hw_slowdown"})};
  auto wa = doc::watch_summary({&a});
  auto wb = doc::watch_summary({&b, &invalid});
  REQUIRE(wa);
  REQUIRE(wb);
  CHECK(*wa->sm_clock_mhz == 1980);
  CHECK(*wa->power_w == 130);  // the busy medians, as the record rounds them
  CHECK(*wa->gpu_util_pct == 95);
  CHECK(wb->throttle == std::vector<std::string>{"sw_power_cap"});  // not the invalid run's
  CHECK(doc::watch_changes(wa, wa) == "SM 1980 → 1980 MHz, power 130 → 130 W, GPU util 95 → 95%");
  CHECK(doc::watch_changes(wa, wb) ==
        "SM 1980 → 1500 MHz, power 130 → 700 W, GPU util 95 → 35%, throttled: none → sw_power_cap");
  // One arm unwatched; neither.
  auto plain = make_record(p, 4, cells[0], {});
  plain.data.invocations = {runner::Invocation{}};
  CHECK_FALSE(doc::watch_summary({&plain}));
  CHECK(doc::watch_changes(std::nullopt, wa) == "SM ? → 1980 MHz, power ? → 130 W, GPU util ? → 95%");
  // Records from before the busy power and utilisation were kept: the clock alone, never the
  // medians over idle samples.
  auto old = a;
  for (auto& inv : old.data.invocations)
    inv.watch->gpus[0].busy_power_w.reset(), inv.watch->gpus[0].busy_gpu_util_pct.reset();
  auto wo = doc::watch_summary({&old});
  CHECK(doc::watch_changes(wo, wo) == "SM 1980 → 1980 MHz");
  CHECK(doc::watch_changes(std::nullopt, std::nullopt).empty());
  // Watched without NVML: not watched.
  plain.data.invocations[0].watch = runner::Watch{};
  CHECK_FALSE(doc::watch_summary({&plain}));
}

TEST_CASE("evidence: one bullet per compared cell, compiled code, counters and NVML; nothing without them") {
  auto p = evidence_plan(kOccupancy, "artifacts: ['k-{warps}.cubin']\n");
  auto cells = p.cells();  // warps=4 batch=16, warps=4 batch=64, warps=8 batch=16, warps=8 batch=64
  std::vector<record::Record> recs;
  int run = 0;
  for (const auto& c : cells) {
    bool variant = c.values[0] == "8";
    auto r = make_record(
        p, ++run, c,
        variant ? occupancy(123, {2, 2, 8, 32}, 22.7, 28.4, 1.64) : occupancy(225, {1, 1, 16, 32}, 11.6, 28.5, 0.89));
    r.data.invocations = {watched(1980, variant ? 128 : 127, 40)};
    record::Artifact art;
    art.path = "k-" + c.values[0] + ".cubin";
    art.sha256 = std::string(64, variant ? 'b' : 'a');
    art.cuda = variant ? facts(123, 0) : facts(225, 12);
    r.artifacts.push_back(art);
    recs.push_back(std::move(r));
  }
  auto cr = record::cells_with_runs(p, recs);
  auto text = doc::evidence(p, cr);
  CHECK(text.starts_with("\n**Evidence against the baseline** ("));
  CHECK(text.find("changes by 2% or more") != std::string::npos);
  CHECK(
      text.find(
          "- **warps=8 batch=16** vs warps=4: k-8.cubin: `decode`: regs 225 → 123, STL 12 → 0, SASS 112 → 100; ncu: "
          "regs 225 → 123, CTAs/SM 1 → 2, limit: registers+shared memory → registers+shared memory, warps active "
          "11.6% → 22.7%, short-scoreboard stall 0.89 → 1.64; NVML: SM 1980 → 1980 MHz, power 127 → 128 W, GPU util 40 → 40%\n") !=
      std::string::npos);
  // The same pair of binaries for the next cell is named, not repeated.
  CHECK(text.find("- **warps=8 batch=64** vs warps=4: k-8.cubin: as for warps=8 batch=16; ncu: regs 225 → 123") !=
        std::string::npos);
  CHECK(text.find("**warps=4") == std::string::npos);  // baselines get no bullet
  // The summary carries it.
  CHECK(doc::render_regions(p, recs)["summary"].find(text) != std::string::npos);

  // Without CUDA artifacts, ncu metrics and watches: nothing.
  auto plain = evidence_plan("");
  std::vector<record::Record> plain_recs;
  run = 0;
  for (const auto& c : plain.cells()) plain_recs.push_back(make_record(plain, ++run, c, {}));
  auto plain_cells = record::cells_with_runs(plain, plain_recs);
  CHECK(doc::evidence(plain, plain_cells).empty());
  CHECK(doc::render_regions(plain, plain_recs)["summary"].find("Evidence") == std::string::npos);
}

TEST_CASE("evidence: a pending baseline gives no bullet; a revision is compared like any arm") {
  auto p = evidence_plan(kOccupancy);
  auto cells = p.cells();
  std::vector<record::Record> recs{make_record(p, 1, cells[2], occupancy(123, {2, 2, 8, 32}, 22.7, 28.4, 1.64))};
  auto cr = record::cells_with_runs(p, recs);
  CHECK(doc::evidence(p, cr).empty());

  auto rev = plan::parse_plan(
      "experiment: r\ndoc: AB.md\nrevisions: {old: HEAD~1, new: WORKTREE}\nbaseline: {rev: old}\n"
      "command: bench\nmetrics:\n  t: {json: t, better: lower}\n  occ: {ncu: occupancy}\n",
      "abtrack.yaml", std::filesystem::temp_directory_path());
  auto rcells = rev.cells();
  REQUIRE(rcells.size() == 2);
  std::vector<record::Record> rrecs{make_record(rev, 1, rcells[0], occupancy(225, {1, 1, 16, 32}, 11.6, 28.5, 0.89)),
                                    make_record(rev, 2, rcells[1], occupancy(225, {1, 2, 16, 32}, 11.6, 28.5, 0.89))};
  rrecs[1].code.commit = std::string(40, 'b');
  auto rcr = record::cells_with_runs(rev, rrecs);
  CHECK(doc::evidence(rev, rcr).ends_with(
      "\n- **rev=new** vs rev=old: ncu: CTAs/SM 1 → 1, limit: registers+shared memory → registers\n"));
}

TEST_CASE("code_changes: a kernel in an anonymous namespace is one kernel in two builds, named short") {
  // nvcc names an anonymous namespace after the file's path and a hash: two revisions' trees
  // give the same kernel two mangled names.
  auto nvcc_name = [](const std::string& hash, const std::string& kernel = "decode") {
    std::string ns = "_GLOBAL__N__" + hash + "_21_mla_decode_kernels_cu_5a3c5c6c";
    return "_ZN7abtrack" + std::to_string(ns.size()) + ns + std::to_string(kernel.size()) + kernel + "ILi8EEEvPKf";
  };
  auto base = facts(160, 0), var = facts(168, 0);
  base.kernels[0].name = nvcc_name("e0c8f1a4");
  var.kernels[0].name = nvcc_name("77d0b2e9");
  CHECK(doc::code_changes(base, var) == "`decode<8>`: regs 160 → 168");
  // A different kernel in the same namespace is still another kernel.
  var.kernels[0].name = nvcc_name("77d0b2e9", "encode");
  CHECK(doc::code_changes(base, var) == "`encode<8>`: only here (regs 168); `decode<8>`: only in the baseline");
}

TEST_CASE("code_changes: two implementations are compared through the kernels ncu profiled") {
  // Theirs: an enum template value in namespaces; ours: an anonymous namespace. ncu names them
  // without qualifiers ("unnamed>::" for the anonymous one) and with the enum as a number.
  auto kernel = [](std::string name, std::int64_t regs, std::int64_t wgmma) {
    metrics::KernelFacts k;
    k.name = std::move(name);
    k.arch = "sm_90a";
    k.registers = regs;
    k.sass = {{"total", 1000}, {"wgmma", wgmma}};
    return k;
  };
  runner::CudaFacts theirs, ours;
  theirs.kernels = {
      kernel("_ZN4sm906decode6kernelINS0_14KernelTemplateILNS_9ModelTypeE1ELi64EEEEEvNS0_6ParamsE", 168, 64),
      kernel("_ZN4sm906decode6kernelINS0_14KernelTemplateILNS_9ModelTypeE0ELi64EEEEEvNS0_6ParamsE", 160, 48),
      kernel("_ZN4sm906decode7combineILi512EEEvNS0_6ParamsE", 48, 0)};
  ours.kernels = {kernel("_ZN7abtrack12_GLOBAL__N_16decodeILi1ELi8EEEvNS_6ParamsE", 168, 96),
                  kernel("_ZN7abtrack12_GLOBAL__N_16decodeILi0ELi8EEEvNS_6ParamsE", 168, 96)};
  const std::vector<std::string> ncu_theirs{"void kernel<KernelTemplate<0, 64>>(Params)"};
  const std::vector<std::string> ncu_ours{"void unnamed>::decode<0, 8>(Params)"};
  CHECK(doc::code_changes(theirs, ours, ncu_theirs, ncu_ours) ==
        "profiled `kernel<KernelTemplate<(ModelType)0, 64>…` → `decode<0, 8>`: regs 160 → 168, "
        "WGMMA 48 → 96; other kernels: 1 only here, 2 only in the baseline");
  // A name ncu gave that no kernel (or more than one) has: the kernels are listed as before.
  CHECK(doc::code_changes(theirs, ours, {"void kernel<KernelTemplate<2, 64>>(Params)"}, ncu_ours)
            .starts_with("`decode<1, 8>`: only here (regs 168); "));
  CHECK(doc::code_changes(theirs, ours, ncu_theirs, {}).starts_with("`decode<1, 8>`: only here (regs 168); "));
  // One kernel built for two architectures: the newest build is the one compared.
  ours.kernels.push_back(kernel("_ZN7abtrack12_GLOBAL__N_16decodeILi0ELi8EEEvNS_6ParamsE", 200, 0));
  ours.kernels.back().arch = "sm_80";
  CHECK(doc::code_changes(theirs, ours, ncu_theirs, ncu_ours)
            .starts_with("profiled `kernel<KernelTemplate<(ModelType)0, 64>…` → `decode<0, 8>`: regs 160 → 168, "));
}

TEST_CASE("evidence: the kernels ncu profiled come from the pool's latest profiled run") {
  // A batch's later rounds are not profiled (plan::ncu_every_run): the latest run has no profile,
  // and the bullet still pairs the kernels that the first round's profiles named.
  auto p = evidence_plan(kOccupancy, "artifacts: ['k-{warps}.cubin']\n");
  auto kernel = [](std::string name, std::int64_t regs) {
    metrics::KernelFacts k;
    k.name = std::move(name);
    k.arch = "sm_90a";
    k.registers = regs;
    k.sass = {{"total", 1000}};
    return k;
  };
  std::vector<record::Record> recs;
  int run = 0;
  for (int round = 1; round <= 2; ++round)
    for (const auto& c : p.cells()) {
      const bool variant = c.values[0] == "8";
      auto r = make_record(p, ++run, c,
                           round > 1 ? std::map<std::string, std::vector<double>>{}
                           : variant ? occupancy(168, {1, 1, 8, 32}, 18.5, 22.0, 1.10)
                                     : occupancy(160, {1, 1, 8, 32}, 18.7, 35.0, 0.44));
      record::Artifact art;
      art.path = "k-" + c.values[0] + ".cubin";
      art.sha256 = std::string(64, variant ? 'b' : 'a');
      runner::CudaFacts f;
      f.kind = "cubin";
      f.kernels = {
          variant ? kernel("_ZN7abtrack12_GLOBAL__N_16decodeILi0ELi8EEEvNS_6ParamsE", 168)
                  : kernel("_ZN4sm906decode6kernelINS0_14KernelTemplateILNS_9ModelTypeE0ELi64EEEEEvNS0_6ParamsE", 160),
          kernel("_ZN4sm906decode7combineILi512EEEvNS0_6ParamsE", 48)};
      art.cuda = f;
      r.artifacts.push_back(art);
      if (round == 1) {
        runner::Profile prof;
        prof.kernels = {variant ? "void unnamed>::decode<0, 8>(Params)" : "void kernel<KernelTemplate<0, 64>>(Params)"};
        r.data.profiles = std::vector<runner::Profile>{prof};
      }
      recs.push_back(std::move(r));
    }
  const auto text = doc::evidence(p, record::cells_with_runs(p, recs));
  CHECK(text.find("- **warps=8 batch=16** vs warps=4: k-8.cubin: profiled `kernel<KernelTemplate<(ModelType)0, 64>…` → "
                  "`decode<0, 8>`: regs 160 → 168; ncu: regs 160 → 168") != std::string::npos);
}
