// How the topk slots of a row are cut into tiles and splits (shared by the CPU and CUDA paths).
#pragma once

namespace abtrack::kernels::mla_decode {

// Tiles of `tile` slots; split s covers tiles [s*tiles_per_split, min((s+1)*tiles_per_split, tiles)).
// Splits past the last tile are empty (they produce o = 0, lse = -inf).
struct SplitPlan {
  int tiles = 0;
  int tiles_per_split = 0;
  int splits = 1;
};

// Plans `splits` splits (>= 1) of `topk` slots in tiles of `tile`.
SplitPlan plan_splits(int topk, int tile, int splits);

// The "auto" split count for a GPU grid: minimises waves * (tiles_per_split + a CTA's fixed
// cost) plus a small per-split cost (the combine), over 1, 2, 4, ..., 64. `resident_ctas` = SMs * CTAs per SM.
int auto_splits_gpu(int batch, int head_blocks, int tiles, int resident_ctas);

// The "auto" split count for the CPU path: enough (batch row, split) items for every thread.
int auto_splits_cpu(int batch, int tiles, int threads);

}  // namespace abtrack::kernels::mla_decode
