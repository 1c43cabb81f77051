// GPU tests: every CUDA variant of the family against the fp64 reference. Exits 77 (CTest's
// skip code) when no usable CUDA device is present.
#include "check.hpp"
#include "cuda_config.hpp"
#include "cuda_runner.hpp"
#include "format.hpp"
#include "mla_decode_kernels.cuh"
#include "problem.hpp"
#include "reference.hpp"
#include "test_support.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace mla = abtrack::kernels::mla_decode;

namespace {

const char* name_of(const mla::CudaConfig& c) {
  static char buf[128];
  std::snprintf(buf, sizeof buf, "warps %d stages %d tile %d splits %d %s %s", c.warps, c.stages, c.tile, c.splits,
                mla::to_string(c.math), mla::to_string(c.dequant));
  return buf;
}

struct Counts {
  int ran = 0;
  int infeasible = 0;
};

// Runs `config` twice (poisoned outputs each time) and checks both results.
void check_variant(mla::CudaDecoder& dec, const mla::Inputs& in, const mla::Reference& ref,
                   const mla::CudaConfig& config, Counts& counts, const char* what) {
  const mla::LaunchPlan plan = dec.plan(config);
  if (!plan.feasible) {
    ++counts.infeasible;
    MLA_CHECK(!plan.why.empty() && plan.smem_bytes > mla::kSm90SmemOptin - 1, "%s %s: infeasible must say why: '%s'",
              what, name_of(config), plan.why.c_str());
    return;
  }
  MLA_CHECK(plan.ctas_per_sm >= 1 && plan.regs_per_thread > 0, "%s %s: resources reported", what, name_of(config));
  MLA_CHECK(plan.local_bytes == 0, "%s %s: %zu bytes of local memory (spills)", what, name_of(config),
            plan.local_bytes);
  for (int rep = 0; rep < 2; ++rep) {
    dec.poison();
    dec.launch(plan);
    const mla::CheckResult c = mla::check_outputs(in.shape, dec.download(), ref);
    MLA_CHECK(c.passed && c.rel_err <= 6.7e-3, "%s %s (splits used %d, run %d): rel_err %g corruption %g%% %s", what,
              name_of(config), plan.splits, rep, c.rel_err, c.corruption_pct, c.first_failure.c_str());
  }
  ++counts.ran;
}

mla::Inputs make(const mla::Shape& s, std::uint64_t seed, double invalid, bool tile, int empty_rows) {
  mla::IndexPattern p;
  p.invalid_fraction = invalid;
  p.invalid_tile = tile;
  p.empty_rows = empty_rows;
  return mla::make_inputs(s, seed, p);
}

// Odd shapes: a partial head block (16), several head blocks (64, 80), topk not a tile multiple;
// `run` gets each shape's inputs, reference and decoder.
template <class Run>
void for_each_odd_shape(Run run) {
  const mla::Shape shapes[] = {{3, 16, 200, 1024}, {2, 64, 333, 1024}, {1, 80, 1000, 4096}, {5, 128, 96, 512}};
  for (const mla::Shape& s : shapes) {
    const double scale = mla::model_softmax_scale();
    const mla::Inputs in = make(s, 21 + s.heads, 0.2, s.topk >= 128, s.batch > 1 ? 1 : 0);
    const mla::Reference ref = mla::reference_decode(in, scale);
    mla::CudaDecoder dec(in, scale);
    run(in, ref, dec);
  }
}

}  // namespace

MLA_TEST("dequant") {
  for (float scale : {1.0f, std::ldexp(1.0f, -6), std::ldexp(1.0f, -13), 4.0f}) {
    const std::vector<float> got = mla::cuda_dequant_selftest(scale);
    int bad_cvt = 0, bad_bits = 0;
    for (int c = 0; c < 256; ++c) {
      if ((c & 0x7f) == 0x7f) continue;  // NaN codes: never produced by the quantizer
      const float want = mla::e4m3_to_float(static_cast<std::uint8_t>(c)) * scale;
      if (got[c] != want) ++bad_cvt;
      if (got[256 + c] != want) ++bad_bits;
      if (got[256 + c] != want && bad_bits == 1)
        std::printf("bits path: code 0x%02x scale %g gives %g, want %g\n", c, scale, got[256 + c], want);
    }
    MLA_CHECK(bad_cvt == 0, "cvt dequant exact for every code at scale %g (%d wrong)", scale, bad_cvt);
    MLA_CHECK(bad_bits == 0, "bit-trick dequant exact for every code at scale %g (%d wrong)", scale, bad_bits);
  }
}

// Every knob combination the family builds names a kernel of its own.
MLA_TEST("instantiations") {
  for (int warps : {4, 8})
    for (int tile : {16, 32, 64}) {
      std::vector<const void*> seen;
      for (bool fma : {false, true})
        for (bool bits : {false, true}) {
          const void* k = mla::decode_kernel(warps, tile, fma, bits);
          MLA_CHECK(k != nullptr, "warps %d tile %d fma %d bits %d is built", warps, tile, fma, bits);
          for (const void* other : seen) MLA_CHECK(other != k, "warps %d tile %d: a kernel of its own", warps, tile);
          seen.push_back(k);
        }
    }
  MLA_CHECK(mla::decode_kernel(6, 32, false, true) == nullptr, "no kernel outside the family");
  for (int cluster : {1, 2, 4, 8}) {
    const void* wg = mla::decode_kernel_wgmma(2, cluster);
    const void* wg1 = mla::decode_kernel_wgmma(1, cluster);  // one stage: without the producer conversion
    MLA_CHECK(wg != nullptr && wg1 != nullptr, "the wgmma kernels are built (cluster %d)", cluster);
    MLA_CHECK(wg1 != wg || mla::wgmma_producer_ksteps() == 0, "one stage runs a wgmma kernel of its own");
    for (int other : {1, 2, 4, 8})
      MLA_CHECK(other == cluster || mla::decode_kernel_wgmma(2, other) != wg,
                "clusters of %d run a wgmma kernel of their own", cluster);
    for (int tile : {16, 32, 64})
      for (bool fma : {false, true})
        for (bool bits : {false, true})
          MLA_CHECK(mla::decode_kernel(8, tile, fma, bits) != wg && mla::decode_kernel(8, tile, fma, bits) != wg1,
                    "wgmma is a kernel of its own");
  }
}

// The tiny size over every knob combination, both softmax scales.
MLA_TEST("tiny") {
  Counts counts;
  for (const double scale : {mla::default_softmax_scale(), mla::model_softmax_scale()}) {
    const mla::Inputs in = make(mla::Shape{2, 32, 128, 512}, scale > 0.1 ? 5 : 4, 0.25, true, 1);
    const mla::Reference ref = mla::reference_decode(in, scale);
    mla::CudaDecoder dec(in, scale);
    for (int warps : {4, 8})
      for (int stages : {1, 2, 3, 4})
        for (int tile : {16, 32, 64})
          for (mla::Math math : {mla::Math::mma, mla::Math::fma})
            for (mla::Dequant dq : {mla::Dequant::cvt, mla::Dequant::bits})
              for (int splits : {1, 3, 0})
                check_variant(dec, in, ref, mla::CudaConfig{warps, stages, tile, splits, math, dq}, counts, "tiny");
  }
  std::printf("tiny: %d variants ran, %d infeasible\n", counts.ran, counts.infeasible);
  MLA_CHECK(counts.ran > 400, "most variants are feasible (%d ran)", counts.ran);
  MLA_CHECK(counts.infeasible > 0, "64-token tiles with 4 stages are refused (%d refused)", counts.infeasible);
}

MLA_TEST("shapes") {
  Counts counts;
  for_each_odd_shape([&](const mla::Inputs& in, const mla::Reference& ref, mla::CudaDecoder& dec) {
    for (int warps : {4, 8})
      for (int tile : {16, 32, 64})
        for (int splits : {1, 3, 0})
          check_variant(dec, in, ref, mla::CudaConfig{warps, 2, tile, splits, mla::Math::mma, mla::Dequant::bits},
                        counts, "shapes");
    check_variant(dec, in, ref, mla::CudaConfig{8, 3, 32, 0, mla::Math::fma, mla::Dequant::cvt}, counts, "shapes");
  });
  std::printf("shapes: %d variants ran\n", counts.ran);
}

// The medium size: B=4, h=64, topk=2048, a 4096-token pool, splits 1, 8, 32.
MLA_TEST("medium") {
  Counts counts;
  const mla::Shape s{4, 64, 2048, 4096};
  const double scale = mla::default_softmax_scale();
  const mla::Inputs in = make(s, 31, 0.1, true, 0);
  const mla::Reference ref = mla::reference_decode(in, scale);
  mla::CudaDecoder dec(in, scale);
  for (int warps : {4, 8})
    for (int tile : {16, 32, 64})
      for (int stages : {1, 2, 3})
        for (int splits : {1, 8, 32})
          check_variant(dec, in, ref, mla::CudaConfig{warps, stages, tile, splits, mla::Math::mma, mla::Dequant::bits},
                        counts, "medium");
  for (mla::Math math : {mla::Math::mma, mla::Math::fma})
    for (mla::Dequant dq : {mla::Dequant::cvt, mla::Dequant::bits})
      check_variant(dec, in, ref, mla::CudaConfig{8, 2, 32, 0, math, dq}, counts, "medium");
  // 64-token tiles, 4 stages and one split of 2048 slots need 252,800 bytes per CTA: refused
  // with the arithmetic, not launched.
  const int refused = counts.infeasible;
  check_variant(dec, in, ref, mla::CudaConfig{4, 4, 64, 1, mla::Math::mma, mla::Dequant::bits}, counts, "medium");
  MLA_CHECK(counts.infeasible == refused + 1, "4 warps, tile 64, 4 stages, 1 split is refused");
  std::printf("medium: %d variants ran, %d infeasible\n", counts.ran, counts.infeasible);
}

// The wgmma kernel (8 warps, 64-token tiles, bits): tiny and odd shapes over splits and stages,
// both softmax scales, the medium size; 3 stages do not fit (refused with the arithmetic), and
// other warps/tile/dequant values are not in its family.
MLA_TEST("wgmma") {
  Counts counts;
  auto config = [](int stages, int splits) {
    return mla::CudaConfig{8, stages, 64, splits, mla::Math::wgmma, mla::Dequant::bits};
  };
  for (const double scale : {mla::default_softmax_scale(), mla::model_softmax_scale()}) {
    const mla::Inputs in = make(mla::Shape{2, 32, 128, 512}, scale > 0.1 ? 5 : 4, 0.25, true, 1);
    const mla::Reference ref = mla::reference_decode(in, scale);
    mla::CudaDecoder dec(in, scale);
    for (int stages : {1, 2})
      for (int splits : {1, 3, 0}) check_variant(dec, in, ref, config(stages, splits), counts, "wgmma tiny");
  }
  for_each_odd_shape([&](const mla::Inputs& in, const mla::Reference& ref, mla::CudaDecoder& dec) {
    for (int splits : {1, 3, 0}) check_variant(dec, in, ref, config(2, splits), counts, "wgmma shapes");
  });
  const mla::Shape s{4, 64, 2048, 4096};
  const mla::Inputs in = make(s, 31, 0.1, true, 0);
  const mla::Reference ref = mla::reference_decode(in, mla::default_softmax_scale());
  mla::CudaDecoder dec(in, mla::default_softmax_scale());
  for (int stages : {1, 2})
    for (int splits : {1, 2, 4, 8, 32}) check_variant(dec, in, ref, config(stages, splits), counts, "wgmma medium");
  // Splits 2, 4 and 8 run as clusters combined in distributed shared memory, others (3 above, 32)
  // through the partials and the last CTA.
  for (int splits : {2, 3, 4, 8, 32}) {
    const int cluster = dec.plan(config(2, splits)).cluster;
    MLA_CHECK(cluster == (splits == 3 || splits == 32 ? 1 : splits), "splits %d: cluster of %d", splits, cluster);
  }
  MLA_CHECK(counts.infeasible == 0, "stages 1 and 2 fit (%d refused)", counts.infeasible);
  check_variant(dec, in, ref, config(3, 8), counts, "wgmma medium");
  MLA_CHECK(counts.infeasible == 1, "3 stages are refused");
  for (const mla::CudaConfig& bad : {mla::CudaConfig{4, 2, 64, 0, mla::Math::wgmma, mla::Dequant::bits},
                                     mla::CudaConfig{8, 2, 32, 0, mla::Math::wgmma, mla::Dequant::bits},
                                     mla::CudaConfig{8, 2, 64, 0, mla::Math::wgmma, mla::Dequant::cvt}})
    MLA_CHECK(!mla::validate_config(bad).empty(), "%s is outside the wgmma family", name_of(bad));
  std::printf("wgmma: %d variants ran\n", counts.ran);
}

// The lazy rescaling's rare path on the GPU: tokens in later 64-slot runs whose scores are
// higher than the others' by 4096 x the softmax scale (spike_tokens), for the wgmma kernel
// (whose check is one vote of its math warps) and the mma.sync kernels, over splits (clusters
// and the last-CTA combine).
MLA_TEST("rescale") {
  Counts counts;
  for (const double scale : {mla::default_softmax_scale(), mla::model_softmax_scale()}) {
    mla::Inputs in = make(mla::Shape{2, 32, 512, 2048}, scale > 0.1 ? 9 : 8, 0.1, false, 0);
    mla::spike_tokens(in, 4096.0f);
    const mla::Reference ref = mla::reference_decode(in, scale);
    mla::CudaDecoder dec(in, scale);
    for (int stages : {1, 2})
      for (int splits : {1, 2, 3, 0})
        check_variant(dec, in, ref, mla::CudaConfig{8, stages, 64, splits, mla::Math::wgmma, mla::Dequant::bits},
                      counts, "rescale");
    for (int warps : {4, 8})
      for (int tile : {32, 64})
        for (int splits : {1, 3})
          check_variant(dec, in, ref, mla::CudaConfig{warps, 2, tile, splits, mla::Math::mma, mla::Dequant::bits},
                        counts, "rescale");
  }
  MLA_CHECK(counts.infeasible == 0 && counts.ran == 32, "%d variants ran, %d refused", counts.ran, counts.infeasible);
}

int main(int argc, char** argv) {
  std::string why;
  if (!mla::cuda_device_available(why)) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  try {
    return mla::test::run_cases(argc, argv);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
