#pragma once
// The document's note on compiled code: where a compared cell's artifacts differ from its
// baseline cell's in registers, memory, spills or SASS instruction mix. Pure.
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "record/compare.hpp"

namespace abtrack::doc {

// One line per distinct pair of differing CUDA artifacts between a cell's latest run and its
// baseline cell's ("- compiled code, warps=8 vs warps=4, build/k.cubin: crowded: regs 32 → 40,
// spill stores 268 → 0 B, STL 84 → 0"), under a heading; "" when no compiled facts differ.
std::string code_differences(const plan::Plan& plan, const std::vector<record::CellRuns>& cells);

}  // namespace abtrack::doc
