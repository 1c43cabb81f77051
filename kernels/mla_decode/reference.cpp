#include "reference.hpp"

#include "format.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <span>
#include <thread>

namespace abtrack::kernels::mla_decode {

namespace {

void reference_row(const Inputs& in, double scale, int b, Reference& ref) {
  const Shape& s = in.shape;
  const std::int32_t* idx = &in.indices[static_cast<std::size_t>(b) * s.topk];
  std::vector<float> kv;  // dequantized valid tokens, [n][576]
  kv.reserve(static_cast<std::size_t>(s.topk) * kDimQk);
  int n = 0;
  for (int j = 0; j < s.topk; ++j) {
    if (idx[j] < 0) continue;
    kv.resize(static_cast<std::size_t>(n + 1) * kDimQk);
    const std::uint8_t* row = &in.pool[static_cast<std::size_t>(idx[j]) * kTokenBytes];
    dequantize_token(std::span<const std::uint8_t>(row, kTokenBytes),
                     std::span<float>(&kv[static_cast<std::size_t>(n) * kDimQk], kDimQk));
    ++n;
  }
  std::vector<double> q(kDimQk), logits(static_cast<std::size_t>(n)), acc(kDimV);
  for (int h = 0; h < s.heads; ++h) {
    const std::size_t bh = static_cast<std::size_t>(b) * s.heads + h;
    double* out = &ref.out[bh * kDimV];
    if (n == 0) {
      std::fill(out, out + kDimV, 0.0);
      ref.lse[bh] = std::numeric_limits<double>::infinity();
      continue;
    }
    for (int d = 0; d < kDimQk; ++d) q[d] = bf16_to_float(in.q[bh * kDimQk + d]);
    double max_logit = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < n; ++j) {
      const float* k = &kv[static_cast<std::size_t>(j) * kDimQk];
      double dot = 0.0;
      for (int d = 0; d < kDimQk; ++d) dot += q[d] * k[d];
      logits[j] = scale * dot;
      max_logit = std::max(max_logit, logits[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < n; ++j) sum += std::exp(logits[j] - max_logit);
    const double lse = max_logit + std::log(sum);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < n; ++j) {
      const double p = std::exp(logits[j] - lse);
      const float* v = &kv[static_cast<std::size_t>(j) * kDimQk];
      for (int d = 0; d < kDimV; ++d) acc[d] += p * v[d];
    }
    std::copy(acc.begin(), acc.end(), out);
    ref.lse[bh] = lse;
  }
}

}  // namespace

Reference reference_decode(const Inputs& in, double softmax_scale, int threads) {
  const Shape& s = in.shape;
  Reference ref;
  ref.out.assign(static_cast<std::size_t>(s.batch) * s.heads * kDimV, 0.0);
  ref.lse.assign(static_cast<std::size_t>(s.batch) * s.heads, 0.0);
  const int workers = std::max(
      1, std::min(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()),
                  s.batch));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int b; (b = next.fetch_add(1)) < s.batch;) reference_row(in, softmax_scale, b, ref);
    });
  for (auto& t : pool) t.join();
  return ref;
}

}  // namespace abtrack::kernels::mla_decode
