#include "format.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace abtrack::kernels::mla_decode {

float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float e4m3_to_float(std::uint8_t bits) {
  const int exponent = (bits >> 3) & 15;
  const int mantissa = bits & 7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return (bits & 0x80) ? -magnitude : magnitude;
}

std::uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7f;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const double magnitude = std::min(std::fabs(static_cast<double>(value)), 448.0);
  // Subnormals (and the smallest normal, which rounding can reach) step by 2^-9.
  if (magnitude < std::ldexp(1.0, -6)) {
    const double q = std::nearbyint(magnitude * 512.0);  // round half to even (default mode)
    return static_cast<std::uint8_t>(sign | static_cast<std::uint8_t>(q));
  }
  int exponent = static_cast<int>(std::floor(std::log2(magnitude)));
  double q = std::nearbyint(std::ldexp(magnitude, 3 - exponent));  // in [8, 16]
  if (q >= 16.0) {
    q = 8.0;
    ++exponent;
  }
  const int biased = exponent + 7;
  return static_cast<std::uint8_t>(sign | (biased << 3) | (static_cast<int>(q) - 8));
}

float quant_scale(float amax) {
  const double ratio = std::max(static_cast<double>(amax) / 448.0, 1e-4);
  return static_cast<float>(std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(ratio)))));
}

void quantize_token(std::span<const float> values, std::span<std::uint8_t> row) {
  for (int block = 0; block < kScaleCount; ++block) {
    float amax = 0.0f;
    for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(values[block * kQuantBlock + i]));
    const float scale = quant_scale(amax);
    for (int i = 0; i < kQuantBlock; ++i)
      row[block * kQuantBlock + i] = float_to_e4m3(values[block * kQuantBlock + i] / scale);
    std::memcpy(&row[kScaleOffset + 4 * block], &scale, 4);
  }
  for (int i = 0; i < kDimRope; ++i) {
    const std::uint16_t bits = float_to_bf16(values[kDimV + i]);
    std::memcpy(&row[kRopeOffset + 2 * i], &bits, 2);
  }
}

void dequantize_token(std::span<const std::uint8_t> row, std::span<float> values) {
  float scales[kScaleCount];
  std::memcpy(scales, &row[kScaleOffset], sizeof scales);
  for (int i = 0; i < kDimV; ++i) values[i] = e4m3_to_float(row[i]) * scales[i / kQuantBlock];
  for (int i = 0; i < kDimRope; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, &row[kRopeOffset + 2 * i], 2);
    values[kDimV + i] = bf16_to_float(bits);
  }
}

}  // namespace abtrack::kernels::mla_decode
