// mla_decode_bench: runs one variant of the sparse MLA FP8 decode (CPU tiled or CUDA), checks it
// against the fp64 reference and prints one JSON object as its last stdout line.
#include "check.hpp"
#include "cpu_tiled.hpp"
#include "cuda_config.hpp"
#include "json_line.hpp"
#include "problem.hpp"
#include "reference.hpp"
#include "splits.hpp"
#ifdef ABTRACK_HAVE_CUDA
#include "cuda_runner.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mla = abtrack::kernels::mla_decode;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInfeasible = 3;
// The bf16 dense matrix rate measured on this workplace's H200 (8192^3 bf16 GEMM through
// PyTorch on random data, 769..798 TFLOP/s; see docs/mla-decode-kernels.md). Not re-measured
// per run: it needs cuBLAS, which the driver does not link.
constexpr double kMatrixFlopsPerS = 790e12;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kHelp = R"(usage: mla_decode_bench [options]

Runs one variant of the sparse MLA FP8 decode (DeepSeek V3.2 layout), checks it against an fp64
CPU reference, times it, and prints one JSON object as the last line of stdout.

  --device cpu|cuda     where to run (default: cuda when built with CUDA, else cpu)
  --batch N             batch rows, one query token each (default 64)
  --heads N             query heads (default 32)
  --topk N              gathered tokens per row (default 2048)
  --pool N              KV pool tokens (default: cuda 1048576 = 688 MB, cpu 65536)
  --warps 4|8           CUDA warps per CTA (default 8)
  --stages 1..4         CUDA cp.async ring depth (default 2)
  --tile N              tokens per tile: CUDA 16|32|64, CPU any >= 1 (default 64)
  --splits N|auto       splits per row (default auto)
  --math mma|fma|wgmma  CUDA QK^T / PV arithmetic (default mma; wgmma needs --warps 8 --tile 64)
  --dequant cvt|bits    CUDA fp8 -> bf16 conversion (default bits)
  --threads N           CPU worker threads (default: all hardware threads)
  --samples N           timed samples (default: cuda 10, cpu 3)
  --warmup N            untimed runs before the samples (default: cuda 3, cpu 1)
  --seed N              input seed (default 1)
  --scale X|default|model  softmax scale (default: 1/sqrt(576); model = 0.1352)
  --invalid-pct X       percentage of index slots set to -1 (default 0)
  --reference-cache DIR keep the fp64 reference in DIR, keyed by a hash of every input byte it
                        reads: a run with the same inputs reads it instead of computing it
  --l2-flush dirty|clean  CUDA: what L2 holds when a sample starts (default dirty: the flush's
                        written lines, which the kernel writes back as it evicts them; clean:
                        lines read from another buffer after the flush)
  --help                this text

Exit status: 0 ran (the JSON says whether the output was correct), 1 runtime error,
2 usage error, 3 configuration infeasible (the JSON says feasible: false and why).
)";

struct Options {
  std::string device;
  mla::Shape shape;
  bool pool_given = false;
  mla::CudaConfig cuda;
  int threads = 0;
  int samples = -1;
  int warmup = -1;
  std::uint64_t seed = 1;
  double scale = mla::default_softmax_scale();
  double invalid_pct = 0.0;
  std::string reference_cache;  // empty: compute the reference every run
  mla::L2Flush l2_flush = mla::L2Flush::dirty;
};

long long parse_int(const std::string& opt, const std::string& text, long long lo, long long hi) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) throw UsageError(opt + " expects an integer, got '" + text + "'");
  if (v < lo || v > hi)
    throw UsageError(opt + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + text);
  return v;
}

double parse_double(const std::string& opt, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v))
    throw UsageError(opt + " expects a number, got '" + text + "'");
  return v;
}

Options parse(int argc, char** argv, bool& help) {
  Options o;
#ifdef ABTRACK_HAVE_CUDA
  o.device = "cuda";
#else
  o.device = "cpu";
#endif
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return o;
    }
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "'");
    std::string value;
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      value = argv[++i];
    }
    if (arg == "--device") {
      if (value != "cpu" && value != "cuda") throw UsageError("--device must be cpu or cuda, got '" + value + "'");
      o.device = value;
    } else if (arg == "--batch") {
      o.shape.batch = static_cast<int>(parse_int(arg, value, 1, 1 << 16));
    } else if (arg == "--heads") {
      o.shape.heads = static_cast<int>(parse_int(arg, value, 1, 1024));
    } else if (arg == "--topk") {
      o.shape.topk = static_cast<int>(parse_int(arg, value, 1, 1 << 20));
    } else if (arg == "--pool") {
      o.shape.pool = parse_int(arg, value, 1, 1LL << 31);
      o.pool_given = true;
    } else if (arg == "--warps") {
      o.cuda.warps = static_cast<int>(parse_int(arg, value, 1, 64));
    } else if (arg == "--stages") {
      o.cuda.stages = static_cast<int>(parse_int(arg, value, 1, 64));
    } else if (arg == "--tile") {
      o.cuda.tile = static_cast<int>(parse_int(arg, value, 1, 4096));
    } else if (arg == "--splits") {
      o.cuda.splits = value == "auto" ? 0 : static_cast<int>(parse_int(arg, value, 1, 4096));
    } else if (arg == "--math") {
      if (value == "mma") o.cuda.math = mla::Math::mma;
      else if (value == "fma") o.cuda.math = mla::Math::fma;
      else if (value == "wgmma") o.cuda.math = mla::Math::wgmma;
      else throw UsageError("--math must be mma, fma or wgmma, got '" + value + "'");
    } else if (arg == "--dequant") {
      if (value != "cvt" && value != "bits") throw UsageError("--dequant must be cvt or bits, got '" + value + "'");
      o.cuda.dequant = value == "cvt" ? mla::Dequant::cvt : mla::Dequant::bits;
    } else if (arg == "--reference-cache") {
      if (value.empty()) throw UsageError("--reference-cache expects a directory");
      o.reference_cache = value;
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(parse_int(arg, value, 1, 4096));
    } else if (arg == "--samples") {
      o.samples = static_cast<int>(parse_int(arg, value, 1, 100000));
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(parse_int(arg, value, 0, 100000));
    } else if (arg == "--seed") {
      o.seed = static_cast<std::uint64_t>(parse_int(arg, value, 0, 1LL << 62));
    } else if (arg == "--scale") {
      if (value == "default") o.scale = mla::default_softmax_scale();
      else if (value == "model") o.scale = mla::model_softmax_scale();
      else o.scale = parse_double(arg, value);
      if (!(o.scale > 0.0)) throw UsageError("--scale must be positive");
    } else if (arg == "--l2-flush") {
      if (value == "dirty") o.l2_flush = mla::L2Flush::dirty;
      else if (value == "clean") o.l2_flush = mla::L2Flush::clean;
      else throw UsageError("--l2-flush must be dirty or clean, got '" + value + "'");
    } else if (arg == "--invalid-pct") {
      o.invalid_pct = parse_double(arg, value);
      if (o.invalid_pct < 0.0 || o.invalid_pct > 100.0) throw UsageError("--invalid-pct must be in [0, 100]");
    } else {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    }
  }
  const bool cuda = o.device == "cuda";
  if (!o.pool_given) o.shape.pool = cuda ? (1LL << 20) : 65536;
  if (o.shape.pool < o.shape.topk)
    throw UsageError("--pool (" + std::to_string(o.shape.pool) + ") must be at least --topk (" +
                     std::to_string(o.shape.topk) + "): the indices of a row are distinct");
  if (o.samples < 0) o.samples = cuda ? 10 : 3;
  if (o.warmup < 0) o.warmup = cuda ? 3 : 1;
  if (cuda) {
    const std::string bad = mla::validate_config(o.cuda);
    if (!bad.empty()) throw UsageError(bad);
  }
  return o;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Fields every result line carries: the configuration.
void add_config(mla::JsonLine& j, const Options& o, bool cuda, std::optional<int> splits_used) {
  j.add("batch", o.shape.batch);
  j.add("heads", o.shape.heads);
  j.add("topk", o.shape.topk);
  j.add("pool", o.shape.pool);
  if (cuda) {
    j.add("warps", o.cuda.warps);
    j.add("stages", o.cuda.stages);
  } else {
    j.add_null("warps");
    j.add_null("stages");
  }
  j.add("tile", o.cuda.tile);
  if (o.cuda.splits == 0) j.add("splits", "auto");
  else j.add("splits", o.cuda.splits);
  j.add_optional("splits_used", splits_used);
  if (cuda) {
    j.add("math", mla::to_string(o.cuda.math));
    j.add("dequant", mla::to_string(o.cuda.dequant));
    j.add_null("threads");
  } else {
    j.add_null("math");
    j.add_null("dequant");
    j.add("threads", o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency()));
  }
  j.add("seed", static_cast<long long>(o.seed));
  j.add("scale", o.scale);
  j.add("invalid_pct", o.invalid_pct);
}

void add_check(mla::JsonLine& j, const mla::CheckResult& c) {
  // A non-finite rel_err (NaN in the output) is capped so that a gate can still read it and fail.
  j.add("rel_err", std::isfinite(c.rel_err) ? c.rel_err : 1e30);
  j.add("max_abs_err", c.max_abs_err);
  j.add("corruption_pct", c.corruption_pct);
  j.add("cos_diff", c.cos_diff);
  j.add("lse_failed", c.failed_lse);
  j.add("check_passed", c.passed);
}

void print_summary(const std::string& what, const std::vector<double>& us, const mla::CheckResult& c) {
  std::printf("%s\n", what.c_str());
  std::printf(
      "  median %.2f us over %zu samples; rel_err %.3e, max_abs_err %.3e, corruption %.4f%%, "
      "cos_diff %.2e, check %s\n",
      median(us), us.size(), c.rel_err, c.max_abs_err, c.corruption_pct, c.cos_diff, c.passed ? "passed" : "FAILED");
  if (!c.passed) std::fprintf(stderr, "mla_decode_bench: warning: check failed: %s\n", c.first_failure.c_str());
}

mla::Reference reference(const mla::Inputs& in, const Options& o) {
  return o.reference_cache.empty() ? mla::reference_decode(in, o.scale)
                                   : mla::reference_decode_cached(in, o.scale, o.reference_cache);
}

mla::Inputs make(const Options& o) {
  mla::IndexPattern pattern;
  pattern.invalid_fraction = o.invalid_pct / 100.0;
  return mla::make_inputs(o.shape, o.seed, pattern);
}

int run_cpu(const Options& o) {
  mla::CpuConfig cfg;
  cfg.tile = o.cuda.tile;
  cfg.threads = o.threads;
  cfg.splits = o.cuda.splits;
  const mla::Inputs in = make(o);
  const mla::Reference ref = reference(in, o);
  std::vector<double> us;
  mla::Outputs got;
  for (int i = 0; i < o.warmup + o.samples; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    got = mla::cpu_tiled_decode(in, o.scale, cfg);
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= o.warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  const mla::CheckResult check = mla::check_outputs(in.shape, got, ref);
  const int splits = mla::cpu_effective_splits(in.shape, cfg);
  print_summary("mla_decode_bench: cpu tiled, tile " + std::to_string(cfg.tile) + ", splits " + std::to_string(splits) +
                    ", B=" + std::to_string(o.shape.batch) + " h=" + std::to_string(o.shape.heads) +
                    " topk=" + std::to_string(o.shape.topk),
                us, check);
  const double med = median(us);
  mla::JsonLine j;
  j.add("samples_us", us);
  j.add("median_us", med);
  add_check(j, check);
  j.add("gbps", mla::decode_bytes(o.shape) / (med * 1e-6) / 1e9);
  j.add("tflops", mla::decode_flops(o.shape) / (med * 1e-6) / 1e12);
  for (const char* k : {"roofline_us", "roofline_frac", "regs_per_thread", "smem_bytes", "ctas_per_sm", "warps_per_sm",
                        "cluster", "local_bytes", "copy_gbps"})
    j.add_null(k);
  j.add("device", "cpu");
  j.add("feasible", true);
  add_config(j, o, false, splits);
  std::printf("%s\n", j.str().c_str());
  return kExitOk;
}

#ifdef ABTRACK_HAVE_CUDA
mla::CheckResult worse(const mla::CheckResult& a, const mla::CheckResult& b) {
  if (!a.passed && b.passed) return a;
  if (a.passed && !b.passed) return b;
  return (a.corruption_pct > b.corruption_pct || !(a.rel_err <= b.rel_err)) ? a : b;
}

int print_infeasible(const Options& o, const std::string& device, const std::string& why, std::size_t smem,
                     std::optional<int> splits) {
  std::fprintf(stderr, "mla_decode_bench: infeasible configuration: %s\n", why.c_str());
  mla::JsonLine j;
  j.add("samples_us", std::vector<double>{});
  for (const char* k : {"median_us", "rel_err", "max_abs_err", "corruption_pct", "gbps", "tflops", "roofline_us",
                        "roofline_frac", "regs_per_thread"})
    j.add_null(k);
  j.add("smem_bytes", static_cast<long long>(smem));
  j.add_null("ctas_per_sm");
  j.add_null("warps_per_sm");
  j.add_null("cluster");
  j.add("device", device);
  j.add("feasible", false);
  j.add("why", why);
  add_config(j, o, true, splits);
  std::printf("%s\n", j.str().c_str());
  return kExitInfeasible;
}

int run_cuda(const Options& o) {
  std::string why;
  if (!mla::cuda_device_available(why)) throw std::runtime_error("--device cuda: " + why);
  const mla::DeviceInfo info = mla::cuda_device_info();
  // Cheap pre-check before generating a large pool: even the smallest index array too big?
  const mla::Feasibility pre = mla::cuda_feasibility(o.cuda, 1, info.smem_optin);
  if (!pre.feasible) return print_infeasible(o, info.name, pre.why, pre.smem_bytes, std::nullopt);

  const mla::Inputs in = make(o);
  mla::CudaDecoder decoder(in, o.scale);
  const mla::LaunchPlan plan = decoder.plan(o.cuda);
  if (!plan.feasible) return print_infeasible(o, info.name, plan.why, plan.smem_bytes, plan.splits);
  const mla::Reference ref = reference(in, o);

  decoder.poison();
  decoder.launch(plan);
  const mla::CheckResult first = mla::check_outputs(in.shape, decoder.download(), ref);
  const std::vector<double> us = decoder.time(plan, o.samples, o.warmup, o.l2_flush);
  const mla::CheckResult last = mla::check_outputs(in.shape, decoder.download(), ref);
  const mla::CheckResult check = worse(first, last);
  const double copy_bw = mla::measure_copy_bandwidth();

  const double med = median(us);
  const double bytes = mla::decode_bytes(o.shape);
  const double flops = mla::decode_flops(o.shape);
  const double roofline_us = std::max(bytes / copy_bw, flops / kMatrixFlopsPerS) * 1e6;
  char line[512];
  std::snprintf(line, sizeof line,
                "mla_decode_bench: cuda %s, warps %d stages %d tile %d splits %d%s %s %s, B=%d h=%d topk=%d; "
                "regs %d smem %zu B, %d CTAs/SM; roofline %.2f us (copy %.0f GB/s)",
                info.name.c_str(), o.cuda.warps, o.cuda.stages, o.cuda.tile, plan.splits,
                o.cuda.splits == 0 ? " (auto)" : "", mla::to_string(o.cuda.math), mla::to_string(o.cuda.dequant),
                o.shape.batch, o.shape.heads, o.shape.topk, plan.regs_per_thread, plan.smem_bytes, plan.ctas_per_sm,
                roofline_us, copy_bw / 1e9);
  print_summary(line, us, check);
  if (plan.local_bytes > 0)
    std::fprintf(stderr, "mla_decode_bench: warning: %zu bytes of local memory per thread (spills)\n",
                 plan.local_bytes);

  mla::JsonLine j;
  j.add("samples_us", us);
  j.add("median_us", med);
  add_check(j, check);
  j.add("gbps", bytes / (med * 1e-6) / 1e9);
  j.add("tflops", flops / (med * 1e-6) / 1e12);
  j.add("roofline_us", roofline_us);
  j.add("roofline_frac", roofline_us / med);
  j.add("regs_per_thread", plan.regs_per_thread);
  j.add("smem_bytes", static_cast<long long>(plan.smem_bytes));
  j.add("ctas_per_sm", plan.ctas_per_sm);
  j.add("warps_per_sm", plan.warps_per_sm);
  j.add("cluster", plan.cluster);
  j.add("local_bytes", static_cast<long long>(plan.local_bytes));
  j.add("copy_gbps", copy_bw / 1e9);
  j.add("l2_flush", o.l2_flush == mla::L2Flush::clean ? "clean" : "dirty");
  j.add("matrix_tflops", kMatrixFlopsPerS / 1e12);
  j.add("sm_clock_mhz", info.sm_clock_mhz);
  j.add("device", info.name);
  j.add("feasible", true);
  add_config(j, o, true, plan.splits);
  std::printf("%s\n", j.str().c_str());
  return kExitOk;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  try {
    bool help = false;
    opts = parse(argc, argv, help);
    if (help) {
      std::fputs(kHelp, stdout);
      return kExitOk;
    }
#ifndef ABTRACK_HAVE_CUDA
    if (opts.device == "cuda")
      throw UsageError("--device cuda: this build has no CUDA support (configure with ABTRACK_ENABLE_CUDA=ON)");
#endif
  } catch (const UsageError& e) {
    std::fprintf(stderr, "mla_decode_bench: error: %s\n", e.what());
    return kExitUsage;
  }
  try {
#ifdef ABTRACK_HAVE_CUDA
    if (opts.device == "cuda") return run_cuda(opts);
#endif
    return run_cpu(opts);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mla_decode_bench: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mla_decode_bench: error: %s\n", e.what());
    return kExitError;
  }
}
