#include <doctest/doctest.h>

#include <string>

#include "metrics/sass.hpp"
#include "util/files.hpp"

using namespace abtrack;

namespace {

std::string recorded(const char* name) {
  return util::read_file(std::string(ABTRACK_SOURCE_DIR) + "/tests/data/cuda/recorded/" + name);
}

const metrics::KernelFacts* find(const std::vector<metrics::KernelFacts>& ks, const std::string& name) {
  for (const auto& k : ks)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("sass: what kind of CUDA binary a file is") {
  CHECK(metrics::cuda_binary_kind(recorded("facts.cubin")) == "cubin");
  CHECK(metrics::cuda_binary_kind("plain text\n").empty());
  CHECK(metrics::cuda_binary_kind("").empty());
  CHECK(metrics::cuda_binary_kind(std::string("\x50\xed\x55\xba\x01\x00\x10\x00", 8)) == "fatbin");
  CHECK(metrics::cuda_binary_kind("!<arch>\nlibk.o/") == "archive");
  // The test binary itself: a host ELF file without device code.
  CHECK(metrics::cuda_binary_kind(util::read_file("/proc/self/exe")).empty());
}

TEST_CASE("sass: classes of opcodes") {
  CHECK(metrics::sass_class("LDG.E.128.CONSTANT") == "global_load");
  CHECK(metrics::sass_class("STG.E") == "global_store");
  CHECK(metrics::sass_class("LDGSTS.E.BYPASS.128") == "async_copy");
  CHECK(metrics::sass_class("UTMALDG.2D") == "tma");
  CHECK(metrics::sass_class("UBLKCP.S.G") == "tma");
  CHECK(metrics::sass_class("HGMMA.64x128x16.F32.BF16") == "wgmma");
  CHECK(metrics::sass_class("HMMA.16816.F32") == "mma");
  CHECK(metrics::sass_class("SYNCS.ARRIVE.TRANS64.A1T0") == "barrier");
  CHECK(metrics::sass_class("BAR.SYNC.DEFER_BLOCKING") == "barrier");
  CHECK(metrics::sass_class("F2FP.F16.F32.PACK_AB") == "conversion");
  CHECK(metrics::sass_class("STL") == "local_store");
  CHECK(metrics::sass_class("FFMA").empty());
  CHECK(metrics::sass_class("LDGX").empty());
}

TEST_CASE("sass: cuobjdump -res-usage of a cubin and of an executable") {
  auto cubin = metrics::parse_res_usage(recorded("res-usage.txt"));
  REQUIRE(cubin.size() == 4);
  const auto* crowded = find(cubin, "_Z7crowdedPKfPfi");
  REQUIRE(crowded);
  CHECK(crowded->arch.empty());
  CHECK(crowded->registers == 32);
  CHECK(crowded->stack_bytes == 272);
  CHECK(crowded->shared_bytes == 0);
  CHECK(crowded->local_bytes == 0);
  CHECK(find(cubin, "_Z4tidyPKfPfi")->shared_bytes == 2048);
  auto exe = metrics::parse_res_usage(recorded("res-usage-exe.txt"));
  REQUIRE(exe.size() == 4);
  CHECK(exe[0].arch == "sm_90a");
  CHECK(exe[0].name == "_Z6tensorPK6__halfS1_Pf");
  CHECK(exe[0].registers == 22);
}

TEST_CASE("sass: instruction classes of a real listing, fed in pieces") {
  const std::string text = recorded("sass.txt");
  metrics::SassCounter whole, pieces;
  whole.feed(text);
  whole.finish();
  for (std::size_t i = 0; i < text.size(); i += 97) pieces.feed(std::string_view(text).substr(i, 97));
  pieces.finish();
  CHECK(whole.counts() == pieces.counts());
  const auto& c = whole.counts();
  REQUIRE(c.size() == 4);
  const auto& tensor = c.at({"_Z6tensorPK6__halfS1_Pf", "sm_90a"});
  CHECK(tensor.at("mma") == 2);
  const auto& staged = c.at({"_Z6stagedPKfPfi", "sm_90a"});
  CHECK(staged.at("async_copy") == 1);
  CHECK(staged.at("barrier") >= 2);  // LDGDEPBAR, DEPBAR, BAR
  const auto& crowded = c.at({"_Z7crowdedPKfPfi", "sm_90a"});
  CHECK(crowded.at("local_store") > 10);  // the spills
  CHECK(crowded.at("local_load") > 10);
  const auto& tidy = c.at({"_Z4tidyPKfPfi", "sm_90a"});
  CHECK(tidy.at("conversion") >= 1);  // float -> half -> float
  CHECK(tidy.at("shared_store") == 1);
  CHECK(tidy.at("global_load") == 1);
  CHECK(tidy.count("local_store") == 0);
  CHECK(tidy.at("total") > 10);
}

TEST_CASE("sass: ptxas -v output and --warn-on-spills warnings") {
  auto log = metrics::parse_ptxas_log(recorded("ptxas.log"));
  const metrics::PtxasFunction* crowded = nullptr;
  for (const auto& f : log.functions)
    if (f.name == "_Z7crowdedPKfPfi") crowded = &f;
  REQUIRE(crowded);
  CHECK(crowded->arch == "sm_90a");
  CHECK(crowded->spill_store_bytes == 268);
  CHECK(crowded->spill_load_bytes == 336);
  CHECK(crowded->stack_bytes == 272);
  CHECK(crowded->registers == 32);
  CHECK(log.spill_warnings.empty());
  auto warned = metrics::parse_ptxas_log(
      "ptxas warning : Registers are spilled to local memory in function '_Z7crowdedPKfPfi', 268 bytes spill stores, 336 bytes spill loads\n");
  REQUIRE(warned.functions.size() == 1);
  CHECK(warned.functions[0].spill_store_bytes == 268);
  CHECK(warned.functions[0].spill_load_bytes == 336);
  CHECK(warned.spill_warnings.size() == 1);
}

TEST_CASE("sass: the three tools' facts joined per kernel") {
  metrics::SassCounter sass;
  sass.feed(recorded("sass.txt"));
  sass.finish();
  auto log = metrics::parse_ptxas_log(recorded("ptxas.log"));
  auto facts = metrics::merge_facts(metrics::parse_res_usage(recorded("res-usage.txt")), sass, &log);
  REQUIRE(facts.size() == 4);
  const auto* crowded = find(facts, "_Z7crowdedPKfPfi");
  REQUIRE(crowded);
  CHECK(crowded->arch == "sm_90a");  // from the listing: a cubin's res-usage names none
  CHECK(crowded->registers == 32);
  CHECK(crowded->spill_store_bytes == 268);
  CHECK(crowded->sass.at("local_store") > 10);
  const auto* tidy = find(facts, "_Z4tidyPKfPfi");
  CHECK(tidy->spill_store_bytes == 0);
  auto without_log = metrics::merge_facts(metrics::parse_res_usage(recorded("res-usage.txt")), sass, nullptr);
  CHECK_FALSE(find(without_log, "_Z7crowdedPKfPfi")->spill_store_bytes.has_value());
}
