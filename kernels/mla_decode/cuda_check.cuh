// CUDA_CHECK(call): throws std::runtime_error naming the failed call, its error and location.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace abtrack::kernels::mla_decode {

// Throws std::runtime_error("<call> failed: <error> (file:line)") when `status` is an error.
inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status) + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace abtrack::kernels::mla_decode

#define CUDA_CHECK(call) ::abtrack::kernels::mla_decode::cuda_check((call), #call, __FILE__, __LINE__)
