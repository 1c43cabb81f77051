#include "splits.hpp"

#include <algorithm>

namespace abtrack::kernels::mla_decode {

SplitPlan plan_splits(int topk, int tile, int splits) {
  SplitPlan plan;
  plan.tiles = (topk + tile - 1) / tile;
  plan.splits = std::max(1, splits);
  plan.tiles_per_split = std::max(1, (plan.tiles + plan.splits - 1) / plan.splits);
  return plan;
}

int auto_splits_gpu(int batch, int head_blocks, int tiles, int resident_ctas) {
  const long long base = static_cast<long long>(batch) * head_blocks;
  int best = 1;
  double best_cost = 1e300;
  for (int s = 1; s <= 64 && s <= std::max(1, tiles); s *= 2) {
    const long long ctas = base * s;
    const long long waves = (ctas + resident_ctas - 1) / std::max(1, resident_ctas);
    const int per_split = (tiles + s - 1) / s;
    // One tile costs ~1 unit; a CTA's prologue (Q load, pipeline fill) ~2 units; a split adds a
    // combine read/write of its partials, ~0.25 unit.
    const double cost = static_cast<double>(waves) * (per_split + 2.0) + 0.25 * s;
    if (cost < best_cost - 1e-9) {
      best_cost = cost;
      best = s;
    }
  }
  return best;
}

int auto_splits_cpu(int batch, int tiles, int threads) {
  const int wanted = (std::max(1, threads) + batch - 1) / batch;
  return std::max(1, std::min(wanted, std::max(1, tiles)));
}

}  // namespace abtrack::kernels::mla_decode
