#pragma once
// Compiled-code facts of an artifact that is a CUDA binary: cuobjdump's resource usage and SASS
// listing per kernel (metrics/sass.hpp reads them), and ptxas's spill report from a build log.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/sass.hpp"

namespace abtrack::runner {

// At most this many kernels of one artifact are recorded (the rest are counted); an artifact's
// `kernel:` regex chooses which.
inline constexpr std::size_t kMaxKernelsRecorded = 64;

struct CudaFacts {
  // "cubin", "fatbin", "elf" (a host file with device code), "archive"; "none": not a CUDA
  // binary (or one with no device code).
  std::string kind;
  std::vector<metrics::KernelFacts> kernels;
  std::size_t kernels_left_out = 0;         // past kMaxKernelsRecorded, or not matching `kernel:`
  std::string build_log;                    // the build log read (repo-relative); empty: none
  std::vector<std::string> spill_warnings;  // ptxas's warnings about spills in it
  std::string error;                        // why the facts are incomplete (no cuobjdump, ...)
  bool cuda() const { return kind != "none"; }
};

// The facts of the file `file` whose bytes are `bytes` (read to hash it: `sha256`): its kind from the
// bytes, then `cuobjdump -res-usage` and `cuobjdump -sass` (found by find_tool("cuobjdump",
// "ABTRACK_CUOBJDUMP")) and, when `build_log` names an existing file, its ptxas report
// (`build_log_shown`: how the record names it). `kernel`: an ECMAScript regex searched in each
// kernel's mangled and demangled names; empty: all. Never throws: a tool that is missing or
// fails leaves `error` set. The same bytes and log give the same facts, computed once a process.
CudaFacts cuda_facts(const std::filesystem::path& file, std::string_view bytes, const std::string& sha256,
                     const std::filesystem::path& build_log, const std::string& build_log_shown,
                     const std::string& kernel);

// `name` demangled ("_Z4tidyPKfPfi" -> "tidy(float const*, float*, int)"), or `name` itself.
std::string demangle(const std::string& name);

}  // namespace abtrack::runner
