#pragma once
// Compiled-code facts of CUDA binaries, read from what the CUDA tools print: per kernel the
// registers, shared, local and stack memory (`cuobjdump -res-usage`), the machine code's
// instructions by class (`cuobjdump -sass`) and ptxas's spill report (its -v output or
// --warn-on-spills warnings in a build log). Pure: running the tools is runner/cuda_facts.hpp's.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace abtrack::metrics {

// What kind of CUDA binary `bytes` (a file's first bytes, or all of them) is: "cubin" (an ELF
// file for the CUDA machine), "fatbin", "elf" (a host executable, object or shared library with
// an embedded fat binary), "archive" (an ar archive: cuobjdump decides), or "" for a file that
// is not a CUDA binary (text, a host ELF file without device code, ...).
std::string cuda_binary_kind(std::string_view bytes);

// The facts of one kernel (one entry function, for one GPU architecture).
struct KernelFacts {
  std::string name;                          // as the binary names it (mangled: "_Z7crowdedPKfPfi")
  std::string arch;                          // "sm_90a"; empty when the tools did not say
  std::optional<std::int64_t> registers;     // per thread
  std::optional<std::int64_t> shared_bytes;  // static shared memory per CTA
  std::optional<std::int64_t> local_bytes;   // local memory per thread
  std::optional<std::int64_t> stack_bytes;   // stack frame per thread (where spills go)
  std::optional<std::int64_t> spill_store_bytes, spill_load_bytes;  // ptxas's report (a build log)
  // Instructions in the machine code by class (static counts, not executed ones): "total" (all
  // but NOP) and each class of sass_class() that occurs.
  std::map<std::string, std::int64_t> sass;
};

// The class of a SASS opcode (its name before the first '.'): "global_load" (LDG),
// "global_store" (STG), "global_atomic" (ATOMG, RED), "generic_load" (LD), "generic_store" (ST),
// "shared_load" (LDS, LDSM), "shared_store" (STS, STSM, STAS), "local_load" (LDL), "local_store" (STL),
// "async_copy" (LDGSTS), "tma" (UTMALDG, UTMASTG, UTMAREDG, UTMAPF, UBLKCP, UBLKRED, UBLKPF),
// "mma" (HMMA, IMMA, DMMA, BMMA), "wgmma" (HGMMA, IGMMA, QGMMA, BGMMA), "barrier" (BAR, SYNCS,
// MEMBAR, DEPBAR, LDGDEPBAR, WARPGROUP), "conversion" (F2F, F2I, I2F, F2FP, I2FP, F2IP, I2IP,
// FRND, I2I); "" for any other.
std::string_view sass_class(std::string_view opcode);

// Parses `cuobjdump -res-usage` output: one entry per "Function NAME:" with its REG, SHARED,
// LOCAL and STACK, under the architecture of the fat binary section it is in (empty for a cubin).
std::vector<KernelFacts> parse_res_usage(std::string_view text);

// Counts the instructions of `cuobjdump -sass` output by kernel and class, fed in chunks as it
// arrives (a large library's listing is never held whole).
class SassCounter {
 public:
  void feed(std::string_view chunk);
  // Takes the last line in when the output did not end with one.
  void finish();
  // (kernel name, arch) -> class -> count, "total" included.
  const std::map<std::pair<std::string, std::string>, std::map<std::string, std::int64_t>>& counts() const {
    return m_counts;
  }

 private:
  void line(std::string_view l);
  std::string m_pending, m_arch, m_function;
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::int64_t>> m_counts;
};

// ptxas's report of one function in a build log.
struct PtxasFunction {
  std::string name;
  std::string arch;  // from "Compiling entry function 'X' for 'sm_90a'"; empty when not said
  std::optional<std::int64_t> registers, stack_bytes, spill_store_bytes, spill_load_bytes;
};
// What a build log says: ptxas -v's "Function properties for X" / "Used N registers" lines and
// the "Registers are spilled to local memory in function 'X', N bytes spill stores, M bytes spill
// loads" warnings. `spill_warnings` keeps the warning lines about spills as they are.
struct PtxasLog {
  std::vector<PtxasFunction> functions;
  std::vector<std::string> spill_warnings;
};
PtxasLog parse_ptxas_log(std::string_view text);

// Joins what the three tools said about a binary's kernels: the res-usage entries, the SASS
// counts and the build log's spills, matched by name and architecture (an empty architecture
// matches any), in the order of `res_usage` (kernels that only the SASS names follow).
std::vector<KernelFacts> merge_facts(std::vector<KernelFacts> res_usage, const SassCounter& sass, const PtxasLog* log);

}  // namespace abtrack::metrics
