#pragma once
// Loading and validating a plan (the only user of yaml-cpp).
#include <filesystem>
#include <string>
#include <string_view>

#include "plan/plan.hpp"

namespace abtrack::plan {

// Parses and validates plan text. `display_name` is how the file is named in messages;
// `repo_root` is the absolute work tree root that doc/template/workdir must stay inside.
// Throws Error(usage) carrying every mistake found, each as FILE:LINE:COL: message.
Plan parse_plan(std::string_view text, const std::string& display_name, const std::filesystem::path& repo_root);

// The plan file's name when -p is not given.
inline constexpr const char* kPlanFile = "abtrack.yaml";

// The plan file when -p is not given: abtrack.yaml in `dir`, else in the nearest folder above it
// up to `root` (the work tree root; the search stops there). Throws Error(usage), saying where it
// looked, when there is none.
std::filesystem::path find_plan(const std::filesystem::path& dir, const std::filesystem::path& root);

// Reads `file` and parses it. Throws Error(usage) when the file is missing (with a hint
// about -p) or the plan is invalid.
Plan load_plan(const std::filesystem::path& file, const std::string& display_name,
               const std::filesystem::path& repo_root);

}  // namespace abtrack::plan
