#pragma once
// Finding the CUDA tools abtrack runs itself (ncu, cuobjdump).
#include <string>
#include <string_view>

namespace abtrack::runner {

// A tool's path: the environment variable `env_var` when set (it must name an executable file),
// else `name` on PATH, else /usr/local/cuda/bin/<name>. Empty when there is none; `looked` then
// says where it looked, for a message ("ncu is not on PATH nor in /usr/local/cuda/bin").
std::string find_tool(std::string_view name, const char* env_var, std::string* looked = nullptr);

}  // namespace abtrack::runner
