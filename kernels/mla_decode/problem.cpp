#include "problem.hpp"

#include "format.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>

namespace abtrack::kernels::mla_decode {

namespace {

// splitmix64: a small, fast, portable generator (std::normal_distribution is not portable).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  float normal() {
    const double u1 = std::max(uniform(), 1e-300);
    const double u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
};

void fill_token(std::uint64_t seed, long long token, std::uint8_t* row) {
  Rng rng{seed ^ (0x5851f42d4c957f2dull * static_cast<std::uint64_t>(token + 1))};
  float values[kDimQk];
  // FlashMLA's test distribution (randn / 10, clamped to [-1, 1]), times a per-token factor of
  // 1/2, 1 or 2 so that the quantization scales (and so the dequant) differ between tokens.
  // The element test's 1e-3 absolute tolerance is calibrated for values of this size.
  const float magnitude = static_cast<float>(std::ldexp(0.1, static_cast<int>(rng.next() % 3) - 1));
  for (float& v : values) v = std::clamp(rng.normal() * magnitude, -1.0f, 1.0f);
  quantize_token(values, std::span<std::uint8_t>(row, kTokenBytes));
}

}  // namespace

Inputs make_inputs(const Shape& shape, std::uint64_t seed, const IndexPattern& pattern) {
  if (shape.batch <= 0 || shape.heads <= 0 || shape.topk <= 0 || shape.pool <= 0)
    throw std::invalid_argument("batch, heads, topk and pool must be positive");
  if (shape.topk > shape.pool)
    throw std::invalid_argument("topk (" + std::to_string(shape.topk) + ") exceeds the pool (" +
                                std::to_string(shape.pool) + " tokens): indices must be distinct");
  Inputs in;
  in.shape = shape;
  Rng rng{seed};
  in.q.resize(static_cast<std::size_t>(shape.batch) * shape.heads * kDimQk);
  for (auto& v : in.q) v = float_to_bf16(std::clamp(rng.normal(), -1.0f, 1.0f));  // as FlashMLA's test

  in.indices.assign(static_cast<std::size_t>(shape.batch) * shape.topk, -1);
  std::unordered_set<std::int64_t> seen;
  for (int b = 0; b < shape.batch; ++b) {
    std::int32_t* row = &in.indices[static_cast<std::size_t>(b) * shape.topk];
    if (b >= shape.batch - pattern.empty_rows) continue;
    seen.clear();
    for (int j = 0; j < shape.topk; ++j) {
      std::int64_t token;
      do {
        token = static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(shape.pool));
      } while (!seen.insert(token).second);
      row[j] = static_cast<std::int32_t>(token);
    }
    for (int j = 0; j < shape.topk; ++j)
      if (rng.uniform() < pattern.invalid_fraction) row[j] = -1;
    if (pattern.invalid_tile && shape.topk >= 128) {
      const int tile = static_cast<int>(rng.next() % static_cast<std::uint64_t>(shape.topk / 64));
      std::fill(row + tile * 64, row + tile * 64 + 64, -1);
    }
  }

  // Unused slots: NaN bytes. Only referenced tokens get data, generated in parallel.
  in.pool.assign(static_cast<std::size_t>(shape.pool) * kTokenBytes, 0xff);
  std::vector<std::int32_t> tokens;
  tokens.reserve(in.indices.size());
  for (auto t : in.indices)
    if (t >= 0) tokens.push_back(t);
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  const unsigned workers =
      std::max(1u, std::min(std::thread::hardware_concurrency(), static_cast<unsigned>(tokens.size() / 4096 + 1)));
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (std::size_t i = w; i < tokens.size(); i += workers)
        fill_token(seed, tokens[i], &in.pool[static_cast<std::size_t>(tokens[i]) * kTokenBytes]);
    });
  for (auto& t : threads) t.join();
  return in;
}

double decode_bytes(const Shape& s) {
  const double bh = static_cast<double>(s.batch) * s.heads;
  return static_cast<double>(s.batch) * s.topk * kTokenBytes + bh * kDimQk * 2 + bh * kDimV * 2 +
         static_cast<double>(s.batch) * s.topk * 4 + bh * 4;
}

double decode_flops(const Shape& s) { return 2.0 * s.batch * s.heads * static_cast<double>(s.topk) * (kDimQk + kDimV); }

void spike_tokens(Inputs& in, float rope) {
  const std::uint16_t rope_bits = float_to_bf16(rope);
  if (!std::isfinite(rope) || bf16_to_float(rope_bits) != rope)
    throw std::invalid_argument("spike_tokens: the RoPE value must be exact in bf16");
  // Every query's RoPE dim 0 is 1: a spiked token's score then gains exactly rope * softmax
  // scale (before the 1/ln 2), the same for every head.
  const std::uint16_t one = float_to_bf16(1.0f);
  for (std::size_t bh = 0; bh < in.q.size() / kDimQk; ++bh) in.q[bh * kDimQk + kDimV] = one;
  std::unordered_set<std::int32_t> spiked;
  for (int b = 0; b < in.shape.batch; ++b) {
    const std::int32_t* row = &in.indices[static_cast<std::size_t>(b) * in.shape.topk];
    for (int run = 64; run < in.shape.topk; run += 64) {
      const std::int32_t* end = row + std::min(in.shape.topk, run + 64);
      const std::int32_t* t = std::find_if(row + run, end, [](std::int32_t i) { return i >= 0; });
      if (t == end || !spiked.insert(*t).second) continue;
      std::memcpy(&in.pool[static_cast<std::size_t>(*t) * kTokenBytes + kRopeOffset], &rope_bits, 2);
    }
  }
}

double default_softmax_scale() { return 1.0 / std::sqrt(static_cast<double>(kDimQk)); }

double model_softmax_scale() {
  const double mscale = 0.1 * std::log(40.0) + 1.0;
  return std::pow(192.0, -0.5) * mscale * mscale;
}

}  // namespace abtrack::kernels::mla_decode
