#pragma once
// Where a run happened: host, OS, CPU, compiler, GPUs (through NVML), driver, CUDA. Cheap.
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace abtrack::runner {

// One GPU as NVML reports it while the run's command runs. Fields NVML cannot give stay unset.
struct Gpu {
  std::string name;                                     // "NVIDIA H200"
  std::string uuid;                                     // "GPU-1a2b..."
  std::string driver;                                   // the driver version, "580.95.05"
  std::optional<unsigned> sm_clock_mhz, mem_clock_mhz;  // current clocks
  std::optional<double> power_limit_w;                  // enforced power limit
  std::optional<unsigned> temperature_c;                // core temperature
  // Where the clocks come from (apply_watched_clocks, run.hpp): "busy" (the median of the samples
  // the watcher took while the GPU was busy), "idle" (watched, never busy: the median of all its
  // samples) or "probe" (the one read of the fingerprint). Empty in records written before it.
  std::string clocks_from;
};

struct Environment {
  std::string host;
  std::string os;         // "Linux 6.1.0-18-amd64 x86_64"
  std::string cpu;        // model name
  unsigned cpus = 0;      // logical CPUs
  std::string compiler;   // the compiler abtrack was built with, "GCC 12.2.0"
  std::vector<Gpu> gpus;  // in NVML's order; empty without an NVIDIA GPU
  std::string driver;     // NVIDIA driver version, "" without one
  std::string cuda;       // CUDA toolkit version of /usr/local/cuda, "" without one
};

// Reads the fingerprint of this machine. NVML (libnvidia-ml.so.1) is loaded at run time;
// without it the GPUs come from the driver's /proc entries (names only), or the list is
// empty. Never throws; unknown fields stay empty.
Environment probe_environment();

// The same fingerprint read once per process, on a thread of its own: start_environment_probe()
// starts it (a command that records runs calls it just before the first command starts, so that
// NVML's ~25 ms on a GPU host overlap the command) and environment()
// waits for it, starting it if nobody did. The GPUs' clocks and temperature are then those of
// the first command's run.
void start_environment_probe();
const Environment& environment();

// The kinds of GPU among `gpus`: their distinct names ("NVIDIA H200"). A run pools only with
// runs on the same kinds (a card's speed is part of what is measured; a host's name or count of
// cards is not: record::gpu_kinds).
std::set<std::string> gpu_kinds(const std::vector<Gpu>& gpus);
// Kinds as one phrase: "NVIDIA H100 80GB HBM3, NVIDIA H200"; "no GPU" for none.
std::string describe_kinds(const std::set<std::string>& kinds);
// Whether a machine with the kinds `here` can go on with what was measured on `measured`: it has
// each of them, and a GPU exactly when they had one.
bool has_kinds(const std::set<std::string>& here, const std::set<std::string>& measured);

}  // namespace abtrack::runner
