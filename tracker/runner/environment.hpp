#pragma once
// Where a run happened: host, OS, CPU, GPUs, driver, CUDA. Read from /proc and /sys; cheap.
#include <string>
#include <vector>

namespace abtrack::runner {

struct Environment {
  std::string host;
  std::string os;       // "Linux 6.1.0-18-amd64 x86_64"
  std::string cpu;      // model name
  unsigned cpus = 0;    // logical CPUs
  std::vector<std::string> gpus;  // model names from the NVIDIA driver's /proc entries
  std::string driver;   // NVIDIA driver version, "" without one
  std::string cuda;     // CUDA toolkit version of /usr/local/cuda, "" without one
};

// Reads the fingerprint of this machine. Never throws; unknown fields stay empty.
Environment probe_environment();

}  // namespace abtrack::runner
