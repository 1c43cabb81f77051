#include "runner/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <thread>

#include "util/text.hpp"

namespace abtrack::runner {
namespace fs = std::filesystem;
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The value after "key:" on the first line that starts with `key`.
std::string field(const std::string& text, std::string_view key) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    if (line.starts_with(key)) {
      auto colon = line.find(':');
      if (colon != std::string_view::npos) return std::string(util::trim(line.substr(colon + 1)));
    }
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return {};
}

}  // namespace

Environment probe_environment() {
  Environment e;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) e.host = host;
  struct utsname u {};
  if (uname(&u) == 0) e.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  e.cpu = field(slurp("/proc/cpuinfo"), "model name");
  e.cpus = std::thread::hardware_concurrency();
  std::error_code ec;
  std::vector<std::string> gpus;
  for (const auto& d : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::string model = field(slurp(d.path() / "information"), "Model");
    if (!model.empty()) gpus.push_back(model);
  }
  std::sort(gpus.begin(), gpus.end());
  e.gpus = gpus;
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." -> 580.159.04
  std::string version = slurp("/proc/driver/nvidia/version");
  if (auto k = version.find("Kernel Module"); k != std::string::npos) {
    std::size_t p = k + 13;
    while (p < version.size() && !std::isdigit(static_cast<unsigned char>(version[p])) && version[p] != '\n') ++p;
    std::size_t q = p;
    while (q < version.size() && (std::isdigit(static_cast<unsigned char>(version[q])) || version[q] == '.')) ++q;
    e.driver = version.substr(p, q - p);
  }
  // Runfile and pip installs leave no version.json; the folder name (cuda-13.0) says it.
  auto target = fs::read_symlink("/usr/local/cuda", ec).filename().string();
  if (!ec && target.starts_with("cuda-")) e.cuda = target.substr(5);
  return e;
}

}  // namespace abtrack::runner
