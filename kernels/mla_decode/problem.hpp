// Problem shapes, generated inputs and output buffers of the sparse MLA FP8 decode.
#pragma once

#include <cstdint>
#include <vector>

namespace abtrack::kernels::mla_decode {

// One decode step: `batch` query tokens, `heads` query heads each, attending to `topk` gathered
// tokens of a pool of `pool` tokens.
struct Shape {
  int batch = 64;
  int heads = 32;
  int topk = 2048;
  long long pool = 65536;
};

// How the generator fills the index table.
struct IndexPattern {
  double invalid_fraction = 0.0;  // share of slots set to -1 (scattered), per row
  bool invalid_tile = false;      // also set one whole aligned 64-slot run of each row to -1
  int empty_rows = 0;             // the last `empty_rows` rows are entirely -1
};

// The inputs of one decode step, host side. Pool slots no index points to hold 0xff bytes
// (NaN in every field), so a wrong gather shows up as NaN.
struct Inputs {
  Shape shape;
  std::vector<std::uint16_t> q;       // [batch][heads][576] bf16 bits
  std::vector<std::uint8_t> pool;     // [pool][656] bytes
  std::vector<std::int32_t> indices;  // [batch][topk], -1 = unused slot
};

// The outputs: out [batch][heads][512] bf16 bits, lse [batch][heads] (natural log; +inf for a
// row with no valid index).
struct Outputs {
  std::vector<std::uint16_t> out;
  std::vector<float> lse;
};

// Fresh random inputs as FlashMLA's tests make them (q ~ N(0,1) clamped to [-1, 1]; KV values
// ~ N(0,1)/10 times a per-token factor of 1/2, 1 or 2, clamped to [-1, 1], so that scales differ;
// distinct indices per row). Deterministic in `seed`. Throws std::invalid_argument
// when the shape is unusable (non-positive sizes, topk > pool).
Inputs make_inputs(const Shape& shape, std::uint64_t seed, const IndexPattern& pattern = {});

// Makes the lazy rescaling's rare path happen (a head's running maximum exceeded by far in a
// later tile), on inputs that stay well conditioned: every query's RoPE dim 0 becomes 1, and in
// each row the first valid token of every 64-slot run but the first (each token at most once)
// gets RoPE dim 0 = `rope` (exact in bf16, else std::invalid_argument). A spiked token's score
// rises by exactly rope * softmax scale for every head; the spikes' weights relative to each other
// depend only on their ordinary scores, so the output keeps the usual precision. (Scaling a
// token's fp8 scales instead would multiply its whole score, and the ~2^-12 rounding of a scale
// to f16 then moves the spikes' relative weights by percents: an input no kernel of this
// precision can match element for element.)
void spike_tokens(Inputs& in, float rope);

// Bytes a decode must move at least: B*topk*656 + q + out + indices + lse.
double decode_bytes(const Shape& shape);
// Floating-point operations: 2*B*h*topk*(576 + 512).
double decode_flops(const Shape& shape);

// The FlashMLA default softmax scale 1/sqrt(576) and the model's 192^-0.5 * mscale^2 (~0.1352).
double default_softmax_scale();
double model_softmax_scale();

}  // namespace abtrack::kernels::mla_decode
