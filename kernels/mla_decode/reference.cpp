#include "reference.hpp"

#include "format.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>

namespace abtrack::kernels::mla_decode {

namespace {

void reference_row(const Inputs& in, double scale, int b, Reference& ref) {
  const Shape& s = in.shape;
  const std::int32_t* idx = &in.indices[static_cast<std::size_t>(b) * s.topk];
  std::vector<float> kv;  // dequantized valid tokens, [n][576]
  kv.reserve(static_cast<std::size_t>(s.topk) * kDimQk);
  int n = 0;
  for (int j = 0; j < s.topk; ++j) {
    if (idx[j] < 0) continue;
    kv.resize(static_cast<std::size_t>(n + 1) * kDimQk);
    const std::uint8_t* row = &in.pool[static_cast<std::size_t>(idx[j]) * kTokenBytes];
    dequantize_token(std::span<const std::uint8_t>(row, kTokenBytes),
                     std::span<float>(&kv[static_cast<std::size_t>(n) * kDimQk], kDimQk));
    ++n;
  }
  std::vector<double> q(kDimQk), logits(static_cast<std::size_t>(n)), acc(kDimV);
  for (int h = 0; h < s.heads; ++h) {
    const std::size_t bh = static_cast<std::size_t>(b) * s.heads + h;
    double* out = &ref.out[bh * kDimV];
    if (n == 0) {
      std::fill(out, out + kDimV, 0.0);
      ref.lse[bh] = std::numeric_limits<double>::infinity();
      continue;
    }
    for (int d = 0; d < kDimQk; ++d) q[d] = bf16_to_float(in.q[bh * kDimQk + d]);
    double max_logit = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < n; ++j) {
      const float* k = &kv[static_cast<std::size_t>(j) * kDimQk];
      double dot = 0.0;
      for (int d = 0; d < kDimQk; ++d) dot += q[d] * k[d];
      logits[j] = scale * dot;
      max_logit = std::max(max_logit, logits[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < n; ++j) sum += std::exp(logits[j] - max_logit);
    const double lse = max_logit + std::log(sum);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < n; ++j) {
      const double p = std::exp(logits[j] - lse);
      const float* v = &kv[static_cast<std::size_t>(j) * kDimQk];
      for (int d = 0; d < kDimV; ++d) acc[d] += p * v[d];
    }
    std::copy(acc.begin(), acc.end(), out);
    ref.lse[bh] = lse;
  }
}

}  // namespace

Reference reference_decode(const Inputs& in, double softmax_scale, int threads) {
  const Shape& s = in.shape;
  Reference ref;
  ref.out.assign(static_cast<std::size_t>(s.batch) * s.heads * kDimV, 0.0);
  ref.lse.assign(static_cast<std::size_t>(s.batch) * s.heads, 0.0);
  const int workers =
      std::max(1, std::min(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()), s.batch));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int b; (b = next.fetch_add(1)) < s.batch;) reference_row(in, softmax_scale, b, ref);
    });
  for (auto& t : pool) t.join();
  return ref;
}

namespace {

// A word-at-a-time multiply-rotate hash (murmur's mixing steps): several GB/s, so hashing the
// ~170 MB a batch of 128 rows reads costs far less than the reference it replaces.
struct Hasher {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  void word(std::uint64_t w) {
    w *= 0x87c37b91114253d5ull;
    w = std::rotl(w, 31) * 0x4cf5ad432745937full;
    h = std::rotl(h ^ w, 27) * 5 + 0x52dce729;
  }
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (; n >= 8; p += 8, n -= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      word(w);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    word(tail ^ (static_cast<std::uint64_t>(n) << 56));
  }
};

constexpr char kMagic[8] = {'M', 'L', 'A', 'R', 'E', 'F', '0', '1'};

bool read_cached(const std::filesystem::path& file, const Shape& s, Reference& ref) {
  std::ifstream f(file, std::ios::binary);
  if (!f) return false;
  char magic[8];
  std::int32_t dims[2];
  const std::size_t n_out = static_cast<std::size_t>(s.batch) * s.heads * kDimV;
  const std::size_t n_lse = static_cast<std::size_t>(s.batch) * s.heads;
  ref.out.resize(n_out);
  ref.lse.resize(n_lse);
  f.read(magic, sizeof magic);
  f.read(reinterpret_cast<char*>(dims), sizeof dims);
  f.read(reinterpret_cast<char*>(ref.out.data()), static_cast<std::streamsize>(n_out * sizeof(double)));
  f.read(reinterpret_cast<char*>(ref.lse.data()), static_cast<std::streamsize>(n_lse * sizeof(double)));
  return f && f.peek() == std::char_traits<char>::eof() && std::memcmp(magic, kMagic, 8) == 0 && dims[0] == s.batch &&
         dims[1] == s.heads;
}

// A cache that cannot be written costs the next run the computation, never this run's result.
void write_cached(const std::filesystem::path& file, const Shape& s, const Reference& ref) {
  const std::filesystem::path tmp =
      file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  try {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    const std::int32_t dims[2] = {s.batch, s.heads};
    f.write(kMagic, sizeof kMagic);
    f.write(reinterpret_cast<const char*>(dims), sizeof dims);
    f.write(reinterpret_cast<const char*>(ref.out.data()),
            static_cast<std::streamsize>(ref.out.size() * sizeof(double)));
    f.write(reinterpret_cast<const char*>(ref.lse.data()),
            static_cast<std::streamsize>(ref.lse.size() * sizeof(double)));
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp.string());
    f.close();
    std::filesystem::rename(tmp, file);  // readers see the old file or the whole new one
  } catch (const std::exception& e) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    std::fprintf(stderr, "mla_decode_bench: warning: reference cache not written (%s)\n", e.what());
  }
}

}  // namespace

std::uint64_t reference_key(const Inputs& in, double softmax_scale) {
  Hasher h;
  // The source hash (kernels/mla_decode/CMakeLists.txt) changes with the code that computes the
  // reference, dequantizes its inputs and writes the file, so two builds never share an entry by
  // mistake.
  h.bytes(ABTRACK_MLA_REFERENCE_SOURCES, sizeof ABTRACK_MLA_REFERENCE_SOURCES - 1);
  const std::int64_t header[4] = {in.shape.batch, in.shape.heads, in.shape.topk,
                                  std::bit_cast<std::int64_t>(softmax_scale)};
  h.bytes(header, sizeof header);
  h.bytes(in.q.data(), in.q.size() * sizeof in.q[0]);
  h.bytes(in.indices.data(), in.indices.size() * sizeof in.indices[0]);
  for (const std::int32_t t : in.indices)
    if (t >= 0) h.bytes(&in.pool[static_cast<std::size_t>(t) * kTokenBytes], kTokenBytes);
  return h.h;
}

Reference reference_decode_cached(const Inputs& in, double softmax_scale, const std::string& dir, int threads) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.ref", static_cast<unsigned long long>(reference_key(in, softmax_scale)));
  const std::filesystem::path file = std::filesystem::path(dir) / name;
  Reference ref;
  if (read_cached(file, in.shape, ref)) return ref;
  ref = reference_decode(in, softmax_scale, threads);
  write_cached(file, in.shape, ref);
  return ref;
}

}  // namespace abtrack::kernels::mla_decode
