// The fp64 CPU reference of the sparse MLA FP8 decode (on the dequantized KV).
#pragma once

#include "problem.hpp"

#include <cstdint>
#include <string>
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

// A 64-bit key of everything the reference reads: q, the indices, every pool row they point to,
// the scale, and a hash of the sources that compute it and write the file (reference.cpp, format.*,
// problem.*).
std::uint64_t reference_key(const Inputs& in, double softmax_scale);

// reference_decode, kept in `dir` as <key>.ref: a later call with the same inputs reads the file
// instead of computing it again (seconds of fp64 work per call at large shapes). A missing or
// malformed file is computed and (atomically) replaced; `dir` is created when missing. A cache
// that cannot be written is a warning on stderr, not an error.
Reference reference_decode_cached(const Inputs& in, double softmax_scale, const std::string& dir, int threads = 0);

}  // namespace abtrack::kernels::mla_decode
