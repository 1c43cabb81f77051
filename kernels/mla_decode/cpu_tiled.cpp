#include "cpu_tiled.hpp"

#include "format.hpp"
#include "splits.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <thread>

namespace abtrack::kernels::mla_decode {

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kMinusBig = -1e30f;  // running max start: -inf would make 2^(m - m') NaN

int resolve_threads(int threads) {
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// One (batch row, split) item: all heads over the split's tiles.
void run_item(const Inputs& in, float scale_log2, int tile, const SplitPlan& plan, int b, int s, Partials& part) {
  const Shape& sh = in.shape;
  const int h_count = sh.heads;
  std::vector<float> kv(static_cast<std::size_t>(tile) * kDimQk);
  std::vector<char> valid(static_cast<std::size_t>(tile));
  std::vector<float> q(static_cast<std::size_t>(h_count) * kDimQk);
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = bf16_to_float(in.q[static_cast<std::size_t>(b) * h_count * kDimQk + i]);
  std::vector<float> acc(static_cast<std::size_t>(h_count) * kDimV, 0.0f);
  std::vector<float> m(static_cast<std::size_t>(h_count), kMinusBig), l(static_cast<std::size_t>(h_count), 0.0f);
  std::vector<float> x(static_cast<std::size_t>(tile));

  const int first = s * plan.tiles_per_split;
  const int last = std::min(plan.tiles, first + plan.tiles_per_split);
  const std::int32_t* idx = &in.indices[static_cast<std::size_t>(b) * sh.topk];
  for (int t = first; t < last; ++t) {
    for (int j = 0; j < tile; ++j) {
      const int slot = t * tile + j;
      valid[j] = slot < sh.topk && idx[slot] >= 0;
      if (!valid[j]) continue;
      const std::uint8_t* row = &in.pool[static_cast<std::size_t>(idx[slot]) * kTokenBytes];
      dequantize_token(std::span<const std::uint8_t>(row, kTokenBytes),
                       std::span<float>(&kv[static_cast<std::size_t>(j) * kDimQk], kDimQk));
    }
    for (int h = 0; h < h_count; ++h) {
      const float* qh = &q[static_cast<std::size_t>(h) * kDimQk];
      float tile_max = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < tile; ++j) {
        if (!valid[j]) {
          x[j] = -std::numeric_limits<float>::infinity();
          continue;
        }
        const float* k = &kv[static_cast<std::size_t>(j) * kDimQk];
        float dot = 0.0f;
        for (int d = 0; d < kDimQk; ++d) dot += qh[d] * k[d];
        x[j] = dot * scale_log2;
        tile_max = std::max(tile_max, x[j]);
      }
      const float m_new = std::max(m[h], tile_max);
      const float alpha = std::exp2(m[h] - m_new);
      float* a = &acc[static_cast<std::size_t>(h) * kDimV];
      for (int d = 0; d < kDimV; ++d) a[d] *= alpha;
      float sum = 0.0f;
      for (int j = 0; j < tile; ++j) {
        const float p = std::exp2(x[j] - m_new);  // 0 for masked slots
        if (p == 0.0f) continue;
        sum += p;
        const float* v = &kv[static_cast<std::size_t>(j) * kDimQk];
        for (int d = 0; d < kDimV; ++d) a[d] += p * v[d];
      }
      l[h] = l[h] * alpha + sum;
      m[h] = m_new;
    }
  }
  for (int h = 0; h < h_count; ++h) {
    const std::size_t row = (static_cast<std::size_t>(b) * part.splits + s) * h_count + h;
    const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
    for (int d = 0; d < kDimV; ++d) part.o[row * kDimV + d] = acc[static_cast<std::size_t>(h) * kDimV + d] * inv;
    part.lse_log2[row] = l[h] > 0.0f ? m[h] + std::log2(l[h]) : -std::numeric_limits<float>::infinity();
  }
}

}  // namespace

void combine_splits(const Shape& sh, const Partials& part, Outputs& res) {
  res.out.assign(static_cast<std::size_t>(sh.batch) * sh.heads * kDimV, 0);
  res.lse.assign(static_cast<std::size_t>(sh.batch) * sh.heads, 0.0f);
  std::vector<float> w(static_cast<std::size_t>(part.splits));
  for (int b = 0; b < sh.batch; ++b)
    for (int h = 0; h < sh.heads; ++h) {
      auto lse_of = [&](int s) {
        return part.lse_log2[(static_cast<std::size_t>(b) * part.splits + s) * sh.heads + h];
      };
      float big = -std::numeric_limits<float>::infinity();
      for (int s = 0; s < part.splits; ++s) big = std::max(big, lse_of(s));
      if (std::isinf(big) && big < 0) big = 0.0f;
      float sum = 0.0f;
      for (int s = 0; s < part.splits; ++s) sum += std::exp2(lse_of(s) - big);
      const std::size_t bh = static_cast<std::size_t>(b) * sh.heads + h;
      if (sum == 0.0f) {  // every split empty
        res.lse[bh] = std::numeric_limits<float>::infinity();
        continue;  // out stays 0
      }
      const float lse2 = big + std::log2(sum);
      for (int s = 0; s < part.splits; ++s) w[s] = std::exp2(lse_of(s) - lse2);
      for (int d = 0; d < kDimV; ++d) {
        float v = 0.0f;
        for (int s = 0; s < part.splits; ++s)
          if (w[s] != 0.0f)
            v += w[s] * part.o[((static_cast<std::size_t>(b) * part.splits + s) * sh.heads + h) * kDimV + d];
        res.out[bh * kDimV + d] = float_to_bf16(v);
      }
      res.lse[bh] = lse2 * 0.6931471805599453f;
    }
}

int cpu_effective_splits(const Shape& shape, const CpuConfig& config) {
  if (config.splits > 0) return config.splits;
  const SplitPlan one = plan_splits(shape.topk, std::max(1, config.tile), 1);
  return auto_splits_cpu(shape.batch, one.tiles, resolve_threads(config.threads));
}

Outputs cpu_tiled_decode(const Inputs& in, double softmax_scale, const CpuConfig& config) {
  if (config.tile < 1) throw std::invalid_argument("tile must be >= 1");
  const Shape& sh = in.shape;
  const SplitPlan plan = plan_splits(sh.topk, config.tile, cpu_effective_splits(sh, config));
  Partials part;
  part.splits = plan.splits;
  part.o.assign(static_cast<std::size_t>(sh.batch) * plan.splits * sh.heads * kDimV, 0.0f);
  part.lse_log2.assign(static_cast<std::size_t>(sh.batch) * plan.splits * sh.heads, 0.0f);
  const float scale_log2 = static_cast<float>(softmax_scale) * kLog2e;
  const int items = sh.batch * plan.splits;
  const int workers = std::min(resolve_threads(config.threads), items);
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < items;)
        run_item(in, scale_log2, config.tile, plan, i / plan.splits, i % plan.splits, part);
    });
  for (auto& t : pool) t.join();
  Outputs res;
  combine_splits(sh, part, res);
  return res;
}

}  // namespace abtrack::kernels::mla_decode
