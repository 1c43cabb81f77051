// CPU tests: format conversions, split planning, the checker, the combine, and the CPU tiled
// decode against the fp64 reference at the tiny and medium sizes of docs (shared) mla-decode.md.
#include "check.hpp"
#include "cpu_tiled.hpp"
#include "cuda_config.hpp"
#include "format.hpp"
#include "problem.hpp"
#include "reference.hpp"
#include "splits.hpp"
#include "test_support.hpp"

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace mla = abtrack::kernels::mla_decode;

namespace {

mla::Inputs tiny_inputs(std::uint64_t seed) {
  mla::Shape s{2, 32, 128, 512};
  mla::IndexPattern pattern;
  pattern.invalid_fraction = 0.25;
  pattern.invalid_tile = true;
  pattern.empty_rows = 1;
  return mla::make_inputs(s, seed, pattern);
}

}  // namespace

MLA_TEST("format") {
  int roundtrip_bad = 0;
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) {
      MLA_CHECK(std::isnan(mla::e4m3_to_float(static_cast<std::uint8_t>(c))), "code %d must be NaN", c);
      continue;
    }
    const float v = mla::e4m3_to_float(static_cast<std::uint8_t>(c));
    if (mla::float_to_e4m3(v) != c) ++roundtrip_bad;
  }
  MLA_CHECK(roundtrip_bad == 0, "%d e4m3 codes do not round-trip", roundtrip_bad);
  MLA_CHECK(mla::e4m3_to_float(0x7e) == 448.0f, "max e4m3 is 448");
  MLA_CHECK(mla::e4m3_to_float(0x01) == std::ldexp(1.0f, -9), "smallest subnormal is 2^-9");
  MLA_CHECK(mla::float_to_e4m3(1.0625f) == mla::float_to_e4m3(1.0f), "ties round to even (down)");
  MLA_CHECK(mla::float_to_e4m3(1.1875f) == mla::float_to_e4m3(1.25f), "ties round to even (up)");
  MLA_CHECK(mla::float_to_e4m3(1000.0f) == 0x7e, "saturates at 448");
  MLA_CHECK(mla::float_to_e4m3(-3.0f) == (0x80 | mla::float_to_e4m3(3.0f)), "sign bit");
  MLA_CHECK(mla::float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == mla::float_to_bf16(1.0f), "bf16 tie to even");
  MLA_CHECK(mla::bf16_to_float(mla::float_to_bf16(-2.5f)) == -2.5f, "bf16 exact value");
  for (float amax : {0.0f, 1e-9f, 0.5f, 3.7f, 448.0f, 1000.0f}) {
    const float s = mla::quant_scale(amax);
    int e = 0;
    MLA_CHECK(std::frexp(s, &e) == 0.5f, "scale %g of amax %g is a power of two", s, amax);
    MLA_CHECK(amax / s <= 448.0f, "amax %g / scale %g <= 448", amax, s);
  }
  // quantize -> dequantize stays within e4m3 precision (relative 2^-4 of the block's scale range).
  float values[mla::kDimQk];
  for (int i = 0; i < mla::kDimQk; ++i) values[i] = std::sin(0.37f * i) * (1 + i % 7);
  std::uint8_t row[mla::kTokenBytes];
  float back[mla::kDimQk];
  mla::quantize_token(values, row);
  mla::dequantize_token(row, back);
  double worst = 0;
  for (int i = 0; i < mla::kDimV; ++i) {
    float scale;
    std::memcpy(&scale, &row[mla::kScaleOffset + 4 * (i / 128)], 4);
    worst = std::max(worst, static_cast<double>(std::fabs(back[i] - values[i]) /
                                                std::max(std::fabs(values[i]), 64 * std::ldexp(scale, -9))));
  }
  MLA_CHECK(worst <= 1.0 / 16, "quantization error %g within e4m3 precision", worst);
  for (int i = mla::kDimV; i < mla::kDimQk; ++i)
    MLA_CHECK(back[i] == mla::bf16_to_float(mla::float_to_bf16(values[i])), "rope %d kept as bf16", i);
}

MLA_TEST("splits") {
  const mla::SplitPlan p = mla::plan_splits(128, 64, 3);
  MLA_CHECK(p.tiles == 2 && p.tiles_per_split == 1 && p.splits == 3, "128/64 in 3 splits: %d %d %d", p.tiles,
            p.tiles_per_split, p.splits);
  const mla::SplitPlan q = mla::plan_splits(2048, 32, 8);
  MLA_CHECK(q.tiles == 64 && q.tiles_per_split == 8, "2048/32 in 8 splits: %d %d", q.tiles, q.tiles_per_split);
  const mla::SplitPlan r = mla::plan_splits(200, 64, 1);
  MLA_CHECK(r.tiles == 4 && r.tiles_per_split == 4, "a partial last tile counts");
  MLA_CHECK(mla::auto_splits_gpu(1, 1, 64, 132) >= 8, "batch 1 splits to fill the SMs");
  MLA_CHECK(mla::auto_splits_gpu(128, 4, 64, 132) <= 2, "a full grid needs no splits");
  MLA_CHECK(mla::auto_splits_cpu(2, 10, 8) == 4, "cpu auto: threads / batch");
  // Feasibility arithmetic: 64-token tiles with 4 stages exceed 227 KB; 3 stages and 16-token
  // tiles fit.
  mla::CudaConfig big{4, 4, 64, 1, mla::Math::mma, mla::Dequant::bits};
  const mla::Feasibility f = mla::cuda_feasibility(big, 32, mla::kSm90SmemOptin);
  MLA_CHECK(!f.feasible && f.why.find("exceeds") != std::string::npos, "T=64 S=4 infeasible: %s", f.why.c_str());
  MLA_CHECK(f.smem_bytes == 36864 + 4 * 64 * 656 + 4 * 32 * 68 * 4 + 32 * 72 * 2 + 384 + 32 * 64 * 4,
            "the carve-up: %zu bytes", f.smem_bytes);
  mla::CudaConfig three{8, 3, 64, 1, mla::Math::mma, mla::Dequant::bits};
  MLA_CHECK(mla::cuda_feasibility(three, 32, mla::kSm90SmemOptin).feasible, "T=64 S=3 feasible");
  mla::CudaConfig small{4, 4, 16, 1, mla::Math::mma, mla::Dequant::bits};
  MLA_CHECK(mla::cuda_feasibility(small, 128, mla::kSm90SmemOptin).feasible, "T=16 S=4 feasible");
  MLA_CHECK(mla::validate_config(mla::CudaConfig{6, 2, 32}) == "warps must be 4 or 8", "bad warps named");
  MLA_CHECK(mla::validate_config(mla::CudaConfig{4, 5, 32}).find("stages") != std::string::npos, "bad stages");
  MLA_CHECK(mla::validate_config(mla::CudaConfig{4, 2, 48}).find("tile") != std::string::npos, "bad tile");
  // The wgmma kernel: 8 warps (two warpgroups) + a third warpgroup for the producer warp (its
  // registers handed to the math through setmaxnreg), 64-token tiles, the bit trick;
  // its carve-up does not grow with the split (indices per ring slot): 2 stages fit, 3 never.
  const mla::CudaConfig wg{8, 2, 64, 0, mla::Math::wgmma, mla::Dequant::bits};
  MLA_CHECK(mla::validate_config(wg).empty(), "8 warps, tile 64, bits is a wgmma variant");
  MLA_CHECK(mla::cuda_threads(wg) == 384 && mla::cuda_threads(three) == 256, "the producer's warpgroup is counted");
  for (const mla::CudaConfig& bad : {mla::CudaConfig{4, 2, 64, 0, mla::Math::wgmma, mla::Dequant::bits},
                                     mla::CudaConfig{8, 2, 32, 0, mla::Math::wgmma, mla::Dequant::bits},
                                     mla::CudaConfig{8, 2, 64, 0, mla::Math::wgmma, mla::Dequant::cvt}})
    MLA_CHECK(mla::validate_config(bad).find("math wgmma needs warps 8, tile 64 and dequant bits") == 0,
              "outside the wgmma family: '%s'", mla::validate_config(bad).c_str());
  const mla::Feasibility w2 = mla::cuda_feasibility(wg, 16, mla::kSm90SmemOptin);
  // V tile, Q, Q RoPE, P, S^T partials, 2 raw stages, reductions (1,024), mbarriers and rescale flags (24),
  // the cluster's m and l (2,048), indices
  MLA_CHECK(w2.feasible && w2.smem_bytes == 65536 + 32768 + 4096 + 4096 + 8192 + 2 * 41984 + 1048 + 2048 + 16 * 256,
            "wgmma, 2 stages: %zu bytes", w2.smem_bytes);
  mla::CudaConfig wg3 = wg;
  wg3.stages = 3;
  const mla::Feasibility w3 = mla::cuda_feasibility(wg3, 1, mla::kSm90SmemOptin);
  MLA_CHECK(!w3.feasible && w3.why.find("f16 K/V tile") != std::string::npos, "wgmma, 3 stages refused: %s",
            w3.why.c_str());
  MLA_CHECK(std::string(mla::to_string(mla::Math::wgmma)) == "wgmma", "the knob's name");
}

MLA_TEST("check") {
  const mla::Inputs in = tiny_inputs(7);
  const double scale = mla::default_softmax_scale();
  const mla::Reference ref = mla::reference_decode(in, scale, 2);
  mla::Outputs exact;
  for (double v : ref.out) exact.out.push_back(mla::float_to_bf16(static_cast<float>(v)));
  for (double v : ref.lse) exact.lse.push_back(static_cast<float>(v));
  const mla::CheckResult ok = mla::check_outputs(in.shape, exact, ref);
  MLA_CHECK(ok.passed && ok.corruption_pct == 0.0, "rounded reference passes: %s", ok.first_failure.c_str());
  MLA_CHECK(ok.rel_err < 4e-3, "bf16 rounding alone gives rel_err %g", ok.rel_err);

  mla::Outputs bad = exact;
  bad.out[100] = mla::float_to_bf16(mla::bf16_to_float(bad.out[100]) + 0.5f);
  const mla::CheckResult one = mla::check_outputs(in.shape, bad, ref);
  MLA_CHECK(!one.passed && one.failed_elements == 1, "one corrupted element found (%lld)", one.failed_elements);
  MLA_CHECK(std::fabs(one.corruption_pct - 100.0 / exact.out.size()) < 1e-12, "corruption_pct %g", one.corruption_pct);

  mla::Outputs nan = exact;
  nan.out[5] = 0xffff;
  const mla::CheckResult n = mla::check_outputs(in.shape, nan, ref);
  MLA_CHECK(!n.passed && n.nonfinite_mismatches == 1, "a NaN output is a mismatch");

  mla::Outputs lse_bad = exact;
  lse_bad.lse[0] += 1e-2f;
  MLA_CHECK(!mla::check_outputs(in.shape, lse_bad, ref).passed, "a wrong lse fails");
  mla::Outputs lse_inf = exact;
  const std::size_t empty = static_cast<std::size_t>(1) * in.shape.heads;  // row 1 is empty
  MLA_CHECK(std::isinf(ref.lse[empty]) && ref.lse[empty] > 0, "reference lse of an empty row is +inf");
  lse_inf.lse[empty] = 0.0f;
  MLA_CHECK(!mla::check_outputs(in.shape, lse_inf, ref).passed, "a finite lse where +inf is expected fails");
}

MLA_TEST("combine") {
  mla::Shape s{1, 2, 1, 1};
  mla::Partials part;
  part.splits = 3;
  part.o.assign(3 * 2 * 512, 0.0f);
  part.lse_log2 = {1.0f, -INFINITY, 1.0f, -INFINITY, -INFINITY, -INFINITY};  // [split][head]
  for (int d = 0; d < 512; ++d) {
    part.o[(0 * 2 + 0) * 512 + d] = 1.0f;  // split 0, head 0
    part.o[(1 * 2 + 0) * 512 + d] = 3.0f;  // split 1, head 0
  }
  mla::Outputs out;
  mla::combine_splits(s, part, out);
  MLA_CHECK(mla::bf16_to_float(out.out[0]) == 2.0f, "equal weights average: %g", mla::bf16_to_float(out.out[0]));
  MLA_CHECK(std::fabs(out.lse[0] - 2.0f * std::log(2.0f)) < 1e-6f, "lse = (1 + log2 2) ln 2: %g", out.lse[0]);
  MLA_CHECK(std::isinf(out.lse[1]) && out.lse[1] > 0 && out.out[512] == 0, "all-empty head: out 0, lse +inf");
}

MLA_TEST("tiny") {
  int variants = 0;
  for (const double scale : {mla::default_softmax_scale(), mla::model_softmax_scale()}) {
    const mla::Inputs in = tiny_inputs(scale > 0.1 ? 3 : 2);
    const mla::Reference ref = mla::reference_decode(in, scale, 2);
    for (int tile : {16, 32, 64})
      for (int threads : {1, 2, 3})
        for (int splits : {1, 3, 0}) {
          const mla::Outputs got = mla::cpu_tiled_decode(in, scale, mla::CpuConfig{tile, threads, splits});
          const mla::CheckResult c = mla::check_outputs(in.shape, got, ref);
          ++variants;
          MLA_CHECK(c.passed && c.rel_err <= 6.7e-3,
                    "scale %g tile %d threads %d splits %d: rel_err %g corruption %g%% %s", scale, tile, threads,
                    splits, c.rel_err, c.corruption_pct, c.first_failure.c_str());
          // The empty row (b = 1): exactly zero output and lse = +inf.
          bool zero = true;
          for (int i = 0; i < in.shape.heads * mla::kDimV; ++i)
            zero =
                zero && mla::bf16_to_float(got.out[static_cast<std::size_t>(in.shape.heads) * mla::kDimV + i]) == 0.0f;
          MLA_CHECK(zero && std::isinf(got.lse[in.shape.heads]) && got.lse[in.shape.heads] > 0,
                    "empty row: out 0 and lse +inf (tile %d splits %d)", tile, splits);
        }
  }
  MLA_CHECK(variants == 54, "ran %d variants", variants);
}

// The reference cache: a hit returns what the file holds (the file is read, not recomputed), the
// key follows every byte the reference reads and no other, and a malformed file is recomputed.
MLA_TEST("reference_cache") {
  const mla::Inputs in = tiny_inputs(5);
  const double scale = mla::default_softmax_scale();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mla_ref_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const mla::Reference direct = mla::reference_decode(in, scale, 2);
  const mla::Reference first = mla::reference_decode_cached(in, scale, dir.string(), 2);
  MLA_CHECK(first.out == direct.out && first.lse == direct.lse, "a miss computes the reference");
  int files = 0;
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir)) file = e.path(), ++files;
  MLA_CHECK(files == 1 && file.extension() == ".ref", "one .ref file written, found %d", files);

  // Change one output value inside the file: a hit must return it.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    const double marker = 12345.0;
    f.seekp(16);
    f.write(reinterpret_cast<const char*>(&marker), sizeof marker);
  }
  const mla::Reference hit = mla::reference_decode_cached(in, scale, dir.string(), 2);
  MLA_CHECK(hit.out[0] == 12345.0 && hit.lse == direct.lse, "a hit reads the file");

  // Truncated: computed again and the file replaced.
  std::filesystem::resize_file(file, 20);
  const mla::Reference again = mla::reference_decode_cached(in, scale, dir.string(), 2);
  MLA_CHECK(again.out == direct.out && std::filesystem::file_size(file) > 20, "a malformed file is recomputed");

  // The key: a referenced pool row, q and the scale change it; an unreferenced row does not.
  const std::uint64_t key = mla::reference_key(in, scale);
  mla::Inputs other = in;
  std::int32_t referenced = -1;
  for (std::size_t i = 0; referenced < 0; ++i) referenced = in.indices[i];
  other.pool[static_cast<std::size_t>(referenced) * mla::kTokenBytes + 7] ^= 1;
  MLA_CHECK(mla::reference_key(other, scale) != key, "a referenced byte changes the key");
  other = in;
  other.q[3] ^= 1;
  MLA_CHECK(mla::reference_key(other, scale) != key, "q changes the key");
  MLA_CHECK(mla::reference_key(in, mla::model_softmax_scale()) != key, "the scale changes the key");
  std::vector<bool> used(static_cast<std::size_t>(in.shape.pool), false);
  for (const std::int32_t t : in.indices)
    if (t >= 0) used[static_cast<std::size_t>(t)] = true;
  std::size_t unused = 0;
  while (used[unused]) ++unused;
  other = in;
  other.pool[unused * mla::kTokenBytes] ^= 1;
  MLA_CHECK(mla::reference_key(other, scale) == key, "an unreferenced row leaves the key");
  std::filesystem::remove_all(dir);
}

// The lazy rescaling's rare path: in later 64-slot runs, tokens whose scores are higher than the
// others' by 4096 x the softmax scale (spike_tokens: ~246 to ~800 in log2 units, past f32's exp
// range), so a head's running maximum is exceeded by far after its first tile.
MLA_TEST("rescale") {
  int variants = 0;
  for (const double scale : {mla::default_softmax_scale(), mla::model_softmax_scale()}) {
    mla::IndexPattern pattern;
    pattern.invalid_fraction = 0.1;
    mla::Inputs in = mla::make_inputs(mla::Shape{2, 32, 256, 1024}, scale > 0.1 ? 7 : 6, pattern);
    const mla::Reference plain = mla::reference_decode(in, scale, 2);
    mla::spike_tokens(in, 4096.0f);
    const mla::Reference ref = mla::reference_decode(in, scale, 2);
    // The spikes move the output (else this test would not reach the path it is for).
    double moved = 0.0;
    for (std::size_t i = 0; i < ref.lse.size(); ++i) moved = std::max(moved, std::fabs(ref.lse[i] - plain.lse[i]));
    MLA_CHECK(moved > 4.0, "the spikes raise some head's lse by %g (want > 4)", moved);
    for (int tile : {16, 32, 64})
      for (int splits : {1, 3, 0}) {
        const mla::Outputs got = mla::cpu_tiled_decode(in, scale, mla::CpuConfig{tile, 2, splits});
        const mla::CheckResult c = mla::check_outputs(in.shape, got, ref);
        ++variants;
        MLA_CHECK(c.passed && c.rel_err <= 6.7e-3, "scale %g tile %d splits %d: rel_err %g corruption %g%% %s", scale,
                  tile, splits, c.rel_err, c.corruption_pct, c.first_failure.c_str());
      }
  }
  MLA_CHECK(variants == 18, "ran %d variants", variants);
  // A RoPE value bf16 cannot hold exactly would make the spikes' offset inexact: refused.
  mla::Inputs in = mla::make_inputs(mla::Shape{1, 16, 128, 512}, 3);
  bool refused = false;
  try {
    mla::spike_tokens(in, 4097.0f);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  MLA_CHECK(refused, "spike_tokens(4097) is refused (not exact in bf16)");
}

MLA_TEST("medium") {
  mla::Shape s{4, 64, 2048, 4096};
  mla::IndexPattern pattern;
  pattern.invalid_fraction = 0.1;
  const mla::Inputs in = mla::make_inputs(s, 11, pattern);
  const double scale = mla::model_softmax_scale();
  const mla::Reference ref = mla::reference_decode(in, scale);
  for (int splits : {1, 8, 32}) {
    const mla::Outputs got = mla::cpu_tiled_decode(in, scale, mla::CpuConfig{64, 0, splits});
    const mla::CheckResult c = mla::check_outputs(in.shape, got, ref);
    MLA_CHECK(c.passed && c.rel_err <= 6.7e-3, "medium splits %d: rel_err %g corruption %g%% %s", splits, c.rel_err,
              c.corruption_pct, c.first_failure.c_str());
  }
}

int main(int argc, char** argv) { return abtrack::kernels::mla_decode::test::run_cases(argc, argv); }
