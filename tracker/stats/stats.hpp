#pragma once
// Everything of abtrack::stats in one include (docs/statistics.md describes the method).
#include "stats/compare.hpp"         // IWYU pragma: export
#include "stats/hodges_lehmann.hpp"  // IWYU pragma: export
#include "stats/holm.hpp"            // IWYU pragma: export
#include "stats/interval.hpp"        // IWYU pragma: export
#include "stats/linear_fit.hpp"      // IWYU pragma: export
#include "stats/mann_whitney.hpp"    // IWYU pragma: export
#include "stats/normal.hpp"          // IWYU pragma: export
#include "stats/paired.hpp"          // IWYU pragma: export
#include "stats/prediction.hpp"      // IWYU pragma: export
#include "stats/quantile.hpp"        // IWYU pragma: export
#include "stats/samples.hpp"         // IWYU pragma: export
#include "stats/sweep.hpp"           // IWYU pragma: export
