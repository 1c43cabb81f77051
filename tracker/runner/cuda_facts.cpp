#include "runner/cuda_facts.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <regex>

#include <fmt/format.h>

#include "runner/tools.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace abtrack::runner {
namespace {

constexpr double kToolTimeoutS = 300;

// The first line of what a tool said on failure: "cuobjdump fatal : ...".
std::string tool_message(const util::ProcessResult& r) {
  std::string text = r.err.empty() ? r.out : r.err;
  auto line = util::trim(std::string_view(text).substr(0, text.find('\n')));
  if (r.timed_out) return fmt::format("timed out after {} s", util::format_number(kToolTimeoutS));
  if (r.signal) return fmt::format("killed by {}", util::signal_name(*r.signal));
  return line.empty() ? fmt::format("exited with status {}", r.exit_code.value_or(-1)) : std::string(line);
}

util::ProcessSpec tool_spec(const std::string& tool, const char* option, const std::filesystem::path& file) {
  util::ProcessSpec spec;
  spec.shell_command = fmt::format("{} {} {}", util::shell_quote(tool), option, util::shell_quote(file.string()));
  spec.timeout_s = kToolTimeoutS;
  return spec;
}

CudaFacts compute(const std::filesystem::path& file, std::string_view bytes, const std::string& log_text,
                  const std::string& build_log_shown, const std::string& kernel) {
  CudaFacts f;
  f.kind = metrics::cuda_binary_kind(bytes);
  if (f.kind.empty()) {
    f.kind = "none";
    return f;
  }
  std::string looked;
  const std::string tool = find_tool("cuobjdump", "ABTRACK_CUOBJDUMP", &looked);
  if (tool.empty()) {
    f.error = "cuobjdump not found: " + looked;
    return f;
  }
  auto usage = util::run_process(tool_spec(tool, "-res-usage", file));
  const std::string said = usage.out + usage.err;
  if (said.find("does not contain device code") != std::string::npos) {
    f.kind = "none";
    return f;
  }
  if (!usage.succeeded()) {
    f.error = "cuobjdump -res-usage: " + tool_message(usage);
    return f;
  }
  // The SASS of a large library runs to hundreds of megabytes: counted as it streams.
  metrics::SassCounter sass;
  auto spec = tool_spec(tool, "-sass", file);
  spec.capture_limit = 64 << 10;
  spec.echo = [&](int stream, std::string_view chunk) {
    if (stream == 1) sass.feed(chunk);
  };
  auto listing = util::run_process(spec);
  sass.finish();
  if (!listing.succeeded()) f.error = "cuobjdump -sass: " + tool_message(listing);
  metrics::PtxasLog log;
  if (!build_log_shown.empty()) {
    log = metrics::parse_ptxas_log(log_text);
    f.build_log = build_log_shown;
    f.spill_warnings = log.spill_warnings;
  }
  auto kernels =
      metrics::merge_facts(metrics::parse_res_usage(usage.out), sass, build_log_shown.empty() ? nullptr : &log);
  std::optional<std::regex> keep;
  if (!kernel.empty()) {
    // The plan's loader has checked the regex; were it bad, every kernel is kept.
    if (auto re = util::compile_regex(kernel)) keep = std::move(re).value();
  }
  for (auto& k : kernels) {
    if (keep && !std::regex_search(k.name, *keep) && !std::regex_search(demangle(k.name), *keep)) {
      ++f.kernels_left_out;
      continue;
    }
    if (f.kernels.size() >= kMaxKernelsRecorded) {
      ++f.kernels_left_out;
      continue;
    }
    f.kernels.push_back(std::move(k));
  }
  return f;
}

}  // namespace

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

CudaFacts cuda_facts(const std::filesystem::path& file, std::string_view bytes, const std::string& sha256,
                     const std::filesystem::path& build_log, const std::string& build_log_shown,
                     const std::string& kernel) {
  std::string log_text;
  std::string log_error;
  if (!build_log_shown.empty()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(build_log, ec)) {
      auto read = util::try_read_file(build_log);
      if (read) log_text = std::move(read).value();
      else log_error = fmt::format("build log {} cannot be read: {}", build_log_shown, read.error());
    } else {
      log_error = fmt::format("build log {} not found", build_log_shown);
    }
  }
  // Every run of a cell names the same binary: its facts are worked out once a process.
  static std::mutex mutex;
  static std::map<std::string, CudaFacts> known;
  const std::string key = sha256 + " " + util::sha256_hex(log_text) + " " + build_log_shown + " " + kernel;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  CudaFacts f = compute(file, bytes, log_text, log_error.empty() ? build_log_shown : std::string(), kernel);
  if (!log_error.empty() && f.cuda()) f.error = f.error.empty() ? log_error : f.error + "; " + log_error;
  std::lock_guard lock(mutex);
  return known.emplace(key, std::move(f)).first->second;
}

}  // namespace abtrack::runner
