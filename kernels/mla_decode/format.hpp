// The sparse MLA FP8 decode data format (DeepSeek V3.2 "DSA" KV layout) and its scalar conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace abtrack::kernels::mla_decode {

inline constexpr int kDimQk = 576;                       // 512 latent ("nope") + 64 RoPE
inline constexpr int kDimV = 512;                        // output / value width
inline constexpr int kDimRope = kDimQk - kDimV;          // 64
inline constexpr int kQuantBlock = 128;                  // latent values per fp32 scale
inline constexpr int kScaleCount = kDimV / kQuantBlock;  // 4
inline constexpr int kTokenBytes = 656;                  // 512 e4m3 + 4 fp32 scales + 64 bf16
inline constexpr int kScaleOffset = 512;                 // byte offset of the four fp32 scales
inline constexpr int kRopeOffset = 528;                  // byte offset of the 64 bf16 RoPE values
inline constexpr int kPageTokens = 64;                   // page size of the pool (informational)

// bf16 bits -> float (exact).
float bf16_to_float(std::uint16_t bits);
// float -> bf16 bits, round to nearest even; NaN stays NaN.
std::uint16_t float_to_bf16(float value);
// e4m3 (fn variant: no inf, 0x7f/0xff = NaN, max 448) bits -> float (exact).
float e4m3_to_float(std::uint8_t bits);
// float -> e4m3 bits, round to nearest even, saturating at +-448 (NaN -> 0x7f).
std::uint8_t float_to_e4m3(float value);

// The per-128-value quantization scale: 2^ceil(log2(max(amax/448, 1e-4))), a power of two.
float quant_scale(float amax);

// Quantizes one token's 576 values into its 656-byte row (`row` must hold kTokenBytes bytes).
void quantize_token(std::span<const float> values, std::span<std::uint8_t> row);
// Dequantizes one 656-byte row into 576 floats (exact: the scales are powers of two).
void dequantize_token(std::span<const std::uint8_t> row, std::span<float> values);

}  // namespace abtrack::kernels::mla_decode
