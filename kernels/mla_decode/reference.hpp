// The fp64 CPU reference of the sparse MLA FP8 decode (on the dequantized KV).
#pragma once

#include "problem.hpp"

#include <vector>

namespace abtrack::kernels::mla_decode {

// Reference results in double: out [batch][heads][512], lse [batch][heads] (natural log,
// +inf for a row with no valid index, whose out is 0).
struct Reference {
  std::vector<double> out;
  std::vector<double> lse;
};

// Computes the reference with `threads` worker threads (0 = all hardware threads).
Reference reference_decode(const Inputs& in, double softmax_scale, int threads = 0);

}  // namespace abtrack::kernels::mla_decode
