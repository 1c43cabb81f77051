#pragma once
#include <string_view>

namespace abtrack {
// The abtrack version ("0.1.0"), recorded in every run record.
std::string_view version();
}  // namespace abtrack
