#include "metrics/sass.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "util/text.hpp"

namespace abtrack::metrics {
namespace {

constexpr std::uint16_t kEmCuda = 190;  // ELF e_machine of CUDA device code

template <class T>
std::optional<T> read_le(std::string_view bytes, std::size_t at) {
  if (at > bytes.size() || bytes.size() - at < sizeof(T)) return std::nullopt;
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

// Whether a 64-bit little-endian ELF file has a section that holds a fat binary (nvcc puts the
// device code of a host executable, object or library there).
bool has_fatbin_section(std::string_view elf) {
  auto shoff = read_le<std::uint64_t>(elf, 0x28);
  auto shentsize = read_le<std::uint16_t>(elf, 0x3A);
  auto shnum = read_le<std::uint16_t>(elf, 0x3C);
  auto shstrndx = read_le<std::uint16_t>(elf, 0x3E);
  if (!shoff || !shentsize || !shnum || !shstrndx || *shentsize < 0x28 || *shstrndx >= *shnum) return false;
  auto header = [&](std::size_t i) { return *shoff + i * *shentsize; };
  auto names_at = read_le<std::uint64_t>(elf, header(*shstrndx) + 0x18);
  auto names_size = read_le<std::uint64_t>(elf, header(*shstrndx) + 0x20);
  if (!names_at || !names_size || *names_at > elf.size() || elf.size() - *names_at < *names_size) return false;
  std::string_view names = elf.substr(*names_at, *names_size);
  for (std::size_t i = 0; i < *shnum; ++i) {
    auto name_off = read_le<std::uint32_t>(elf, header(i));
    if (!name_off || *name_off >= names.size()) continue;
    std::string_view name = names.substr(*name_off);
    name = name.substr(0, name.find('\0'));
    if (name == ".nv_fatbin" || name == "__nv_relfatbin" || name == ".nvFatBinSegment") return true;
  }
  return false;
}

// The number written just before `label` in `text` ("268 bytes spill stores" -> 268).
std::optional<std::int64_t> number_before(std::string_view text, std::string_view label) {
  auto at = text.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t end = at;
  while (end > 0 && text[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && text[begin - 1] >= '0' && text[begin - 1] <= '9') --begin;
  if (begin == end) return std::nullopt;
  return std::stoll(std::string(text.substr(begin, end - begin)));
}

// The text between the first pair of single quotes after `after` ("function 'X'" -> X).
std::string quoted_after(std::string_view text, std::string_view after) {
  auto at = text.find(after);
  if (at == std::string_view::npos) return {};
  auto open = text.find('\'', at + after.size());
  if (open == std::string_view::npos) return {};
  auto close = text.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return std::string(text.substr(open + 1, close - open - 1));
}

bool same_arch(const std::string& a, const std::string& b) { return a.empty() || b.empty() || a == b; }

}  // namespace

std::string cuda_binary_kind(std::string_view bytes) {
  if (bytes.starts_with("!<arch>\n")) return "archive";
  if (bytes.size() >= 4 && static_cast<unsigned char>(bytes[0]) == 0x50 &&
      static_cast<unsigned char>(bytes[1]) == 0xED && static_cast<unsigned char>(bytes[2]) == 0x55 &&
      static_cast<unsigned char>(bytes[3]) == 0xBA)
    return "fatbin";
  if (!bytes.starts_with("\x7f"
                         "ELF") ||
      bytes.size() < 0x40)
    return {};
  if (read_le<std::uint16_t>(bytes, 18) == kEmCuda) return "cubin";
  // A host file: 64-bit little-endian is what nvcc makes for the hosts abtrack runs on.
  if (bytes[4] == 2 && bytes[5] == 1 && has_fatbin_section(bytes)) return "elf";
  return {};
}

std::string_view sass_class(std::string_view opcode) {
  struct Entry {
    const char* op;
    const char* cls;
  };
  static constexpr std::array<Entry, 44> kClasses = {{
      {"LDG", "global_load"},   {"STG", "global_store"},  {"ATOMG", "global_atomic"},
      {"RED", "global_atomic"}, {"LD", "generic_load"},   {"ST", "generic_store"},
      {"LDS", "shared_load"},   {"LDSM", "shared_load"},  {"STS", "shared_store"},
      {"STSM", "shared_store"}, {"LDL", "local_load"},    {"STL", "local_store"},
      {"LDGSTS", "async_copy"}, {"UTMALDG", "tma"},       {"UTMASTG", "tma"},
      {"UTMAREDG", "tma"},      {"UTMAPF", "tma"},        {"UBLKCP", "tma"},
      {"UBLKRED", "tma"},       {"UBLKPF", "tma"},        {"HMMA", "mma"},
      {"IMMA", "mma"},          {"DMMA", "mma"},          {"BMMA", "mma"},
      {"HGMMA", "wgmma"},       {"IGMMA", "wgmma"},       {"QGMMA", "wgmma"},
      {"BGMMA", "wgmma"},       {"BAR", "barrier"},       {"SYNCS", "barrier"},
      {"MEMBAR", "barrier"},    {"DEPBAR", "barrier"},    {"LDGDEPBAR", "barrier"},
      {"WARPGROUP", "barrier"}, {"F2F", "conversion"},    {"F2I", "conversion"},
      {"I2F", "conversion"},    {"F2FP", "conversion"},   {"I2FP", "conversion"},
      {"F2IP", "conversion"},   {"I2IP", "conversion"},   {"FRND", "conversion"},
      {"I2I", "conversion"},    {"STAS", "shared_store"},
  }};
  std::string_view base = opcode.substr(0, opcode.find('.'));
  for (const auto& e : kClasses)
    if (base == e.op) return e.cls;
  return {};
}

std::vector<KernelFacts> parse_res_usage(std::string_view text) {
  std::vector<KernelFacts> out;
  std::string arch;
  bool expect_values = false;
  for (std::string_view rest = text; !rest.empty();) {
    auto nl = rest.find('\n');
    std::string_view line = util::trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.starts_with("arch = ")) {
      arch = std::string(util::trim(line.substr(7)));
      continue;
    }
    if (line.starts_with("Function ") && line.ends_with(":")) {
      KernelFacts k;
      k.name = std::string(util::trim(line.substr(9, line.size() - 10)));
      k.arch = arch;
      out.push_back(std::move(k));
      expect_values = true;
      continue;
    }
    if (!expect_values || out.empty()) continue;
    expect_values = false;
    // "REG:22 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0"
    for (std::string_view words = line; !words.empty();) {
      auto sp = words.find(' ');
      std::string_view word = words.substr(0, sp);
      words = sp == std::string_view::npos ? std::string_view{} : util::trim(words.substr(sp));
      auto colon = word.find(':');
      if (colon == std::string_view::npos) continue;
      auto value = util::parse_double(word.substr(colon + 1));
      if (!value) continue;
      std::string_view key = word.substr(0, colon);
      auto v = static_cast<std::int64_t>(*value);
      if (key == "REG") out.back().registers = v;
      else if (key == "SHARED") out.back().shared_bytes = v;
      else if (key == "LOCAL") out.back().local_bytes = v;
      else if (key == "STACK") out.back().stack_bytes = v;
    }
  }
  return out;
}

void SassCounter::feed(std::string_view chunk) {
  while (!chunk.empty()) {
    auto nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      m_pending.append(chunk);
      return;
    }
    if (m_pending.empty()) {
      line(chunk.substr(0, nl));
    } else {
      m_pending.append(chunk.substr(0, nl));
      line(m_pending);
      m_pending.clear();
    }
    chunk.remove_prefix(nl + 1);
  }
}

void SassCounter::finish() {
  if (!m_pending.empty()) line(m_pending);
  m_pending.clear();
}

void SassCounter::line(std::string_view l) {
  l = util::trim(l);
  if (l.starts_with("code for ")) {
    m_arch = std::string(util::trim(l.substr(9)));
    return;
  }
  if (l.starts_with("Function : ")) {
    m_function = std::string(util::trim(l.substr(11)));
    m_counts[{m_function, m_arch}]["total"];
    return;
  }
  // "/*0160*/  @!P0 HMMA.16816.F32 R16, R4.reuse, R12, RZ ;  /* 0x0000000c0410723c */"
  if (m_function.empty() || !l.starts_with("/*")) return;
  auto close = l.find("*/");
  if (close == std::string_view::npos || close == 2) return;
  std::string_view address = l.substr(2, close - 2);
  if (!std::all_of(address.begin(), address.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return;
  std::string_view rest = util::trim(l.substr(close + 2));
  if (rest.starts_with("{")) rest = util::trim(rest.substr(1));
  if (rest.starts_with("@")) {
    auto sp = rest.find(' ');
    if (sp == std::string_view::npos) return;
    rest = util::trim(rest.substr(sp));
  }
  std::string_view opcode = rest.substr(0, std::min(rest.find(' '), rest.find(';')));
  if (opcode.empty() || opcode == "NOP") return;
  auto& counts = m_counts[{m_function, m_arch}];
  ++counts["total"];
  if (auto cls = sass_class(opcode); !cls.empty()) ++counts[std::string(cls)];
}

PtxasLog parse_ptxas_log(std::string_view text) {
  PtxasLog out;
  std::string arch, compiling, properties_of;
  auto function = [&](const std::string& name, const std::string& a) -> PtxasFunction& {
    for (auto& f : out.functions)
      if (f.name == name && f.arch == a) return f;
    out.functions.push_back(PtxasFunction{name, a, {}, {}, {}, {}});
    return out.functions.back();
  };
  for (std::string_view rest = text; !rest.empty();) {
    auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find("Compiling entry function") != std::string_view::npos) {
      compiling = quoted_after(line, "Compiling entry function");
      arch = quoted_after(line, "' for");
      properties_of.clear();
      continue;
    }
    if (auto at = line.find("Function properties for "); at != std::string_view::npos) {
      properties_of = std::string(util::trim(line.substr(at + 24)));
      continue;
    }
    if (line.find("bytes spill stores") != std::string_view::npos) {
      const bool warning = line.find("warning") != std::string_view::npos;
      std::string name = warning ? quoted_after(line, "function") : properties_of;
      if (warning) out.spill_warnings.emplace_back(util::trim(line));
      if (name.empty()) continue;
      auto& f = function(name, arch);
      if (auto v = number_before(line, "bytes stack frame")) f.stack_bytes = v;
      if (auto v = number_before(line, "bytes spill stores")) f.spill_store_bytes = v;
      if (auto v = number_before(line, "bytes spill loads")) f.spill_load_bytes = v;
      continue;
    }
    if (line.find("Used ") != std::string_view::npos && line.find(" registers") != std::string_view::npos &&
        !compiling.empty()) {
      if (auto v = number_before(line, "registers")) function(compiling, arch).registers = v;
    }
  }
  return out;
}

std::vector<KernelFacts> merge_facts(std::vector<KernelFacts> kernels, const SassCounter& sass, const PtxasLog* log) {
  for (const auto& [key, counts] : sass.counts()) {
    const std::string& name = key.first;
    const std::string& arch = key.second;
    auto it = std::find_if(kernels.begin(), kernels.end(),
                           [&](const KernelFacts& k) { return k.name == name && same_arch(k.arch, arch); });
    if (it == kernels.end()) {
      KernelFacts k;
      k.name = name;
      k.arch = arch;
      kernels.push_back(std::move(k));
      it = kernels.end() - 1;
    }
    if (it->arch.empty()) it->arch = arch;
    it->sass = counts;
  }
  if (log)
    for (auto& k : kernels)
      for (const auto& f : log->functions) {
        if (f.name != k.name || !same_arch(f.arch, k.arch)) continue;
        if (f.spill_store_bytes) k.spill_store_bytes = f.spill_store_bytes;
        if (f.spill_load_bytes) k.spill_load_bytes = f.spill_load_bytes;
        if (!k.registers && f.registers) k.registers = f.registers;
        if (!k.stack_bytes && f.stack_bytes) k.stack_bytes = f.stack_bytes;
      }
  return kernels;
}

}  // namespace abtrack::metrics
