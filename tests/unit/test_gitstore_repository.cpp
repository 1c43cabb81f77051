#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <libssh2.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>

#include "git_scratch.hpp"
#include "gitstore/repository.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

#ifdef ABTRACK_STATIC_DEPS
// abtrack's own GSSAPI definitions (gitstore/link_overrides.cpp), in place of libgssapi_krb5.
extern "C" std::uint32_t gss_indicate_mechs(std::uint32_t* minor, void** mechs);
extern "C" std::uint32_t gss_release_oid_set(std::uint32_t* minor, void** mechs);

TEST_CASE("GSSAPI is absent: libgit2's Negotiate authentication would fail cleanly") {
  std::uint32_t minor = 7;
  void* mechs = &minor;
  std::uint32_t major = gss_indicate_mechs(&minor, &mechs);
  CHECK((major & 0xffff0000u) == (13u << 16));  // GSS_S_FAILURE, a routine error
  CHECK(minor == 0);
  CHECK(mechs == nullptr);
  CHECK(gss_release_oid_set(&minor, &mechs) == 0);
}
#endif

TEST_CASE("libgit2 starts without loading CA certificates, and commits") {
  GitScratch scratch("git");
  const fs::path& dir = scratch.dir;
  {
    auto repo = gitstore::Repository::discover(dir);
#ifdef ABTRACK_STATIC_DEPS
    // Linked statically with the wrappers: libgit2's one request for the CA bundle got nothing.
    CHECK(gitstore::ca_certificate_loads_skipped() == 1);
    // ... and its random generator was not seeded: that waits for a first draw, which no commit makes.
    CHECK(gitstore::deferred_rng_seeding().deferred >= 1);
    // ... and libssh2 was left to initialise itself should an SSH session ever be made.
    CHECK(gitstore::libssh2_inits_deferred() == 1);
#else
    CHECK(gitstore::libssh2_inits_deferred() == 0);
    CHECK(gitstore::ca_certificate_loads_skipped() == 0);
    CHECK(gitstore::deferred_rng_seeding().deferred == 0);
#endif
    const int seeded_before = gitstore::deferred_rng_seeding().performed;
    auto done = repo.commit([](const gitstore::TreeView& tip) {
      CHECK_FALSE(tip.commit().has_value());  // an unborn branch
      gitstore::Change c;
      c.message = "first\n";
      c.files = {{"runs/x/0001.json", "{}\n"}};
      return c;
    });
    CHECK(done.commit.size() == 40);
    CHECK(repo.head() == done.commit);
    CHECK(repo.with_head([](const gitstore::TreeView& t) { return t.read("runs/x/0001.json"); }) == std::string("{}\n"));
    CHECK(util::read_file(dir / "runs/x/0001.json") == "{}\n");
    CHECK(repo.status({"runs/"}).empty());
    CHECK(gitstore::deferred_rng_seeding().performed == seeded_before);
  }
}

#ifdef ABTRACK_STATIC_DEPS
TEST_CASE("libssh2, not initialised by libgit2, initialises itself when a session is made") {
  fs::path dir = fs::temp_directory_path() / fmt::format("abtrack-unit-ssh-{}", std::random_device{}());
  fs::create_directories(dir);
  REQUIRE(std::system(("git init -q '" + dir.string() + "'").c_str()) == 0);
  gitstore::Repository::discover(dir);  // libgit2 initialised: libssh2 was not
  fs::remove_all(dir);
  CHECK(gitstore::libssh2_inits_deferred() == 1);
  LIBSSH2_SESSION* session = libssh2_session_init();
  REQUIRE(session != nullptr);
  CHECK(libssh2_session_free(session) == 0);
}
#endif

#ifdef ABTRACK_STATIC_DEPS
// libgit2's whole-file checksum, as libgit2's own files call it (through the wrapper) and as
// libgit2 computes it (SHA1DC).
extern "C" int git_hash_buf(unsigned char* out, const void* data, size_t len, int algorithm);
extern "C" int __real_git_hash_buf(unsigned char* out, const void* data, size_t len, int algorithm);

TEST_CASE("whole-file checksums: OpenSSL's SHA-1 gives libgit2's SHA1DC bytes, and a torn index is still refused") {
  std::mt19937_64 rng(7);
  for (std::size_t len : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 1000u, 90'000u, 1'000'003u}) {
    std::string data(len, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    unsigned char fast[20] = {}, dc[20] = {1};
    const int before = gitstore::fast_file_checksums();
    REQUIRE(git_hash_buf(fast, data.data(), data.size(), 1) == 0);
    CHECK(gitstore::fast_file_checksums() == before + 1);
    REQUIRE(__real_git_hash_buf(dc, data.data(), data.size(), 1) == 0);
    CHECK(std::memcmp(fast, dc, sizeof fast) == 0);
  }
  // An empty string's SHA-1, as every implementation has it.
  unsigned char empty[20];
  REQUIRE(git_hash_buf(empty, "", 0, 1) == 0);
  CHECK(fmt::format("{:02x}", fmt::join(empty, empty + 20, "")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");

  fs::path dir = fs::temp_directory_path() / fmt::format("abtrack-unit-index-{}", std::random_device{}());
  fs::create_directories(dir);
  std::string q = "'" + dir.string() + "'";
  REQUIRE(std::system(("git init -q " + q + " && echo x >" + q + "/f && mkdir " + q + "/runs && echo r >" + q +
                       "/runs/r && git -C " + q + " add f runs").c_str()) == 0);
  {
    auto repo = gitstore::Repository::discover(dir);
    const int before = gitstore::fast_file_checksums();
    CHECK(repo.dirty({}));  // f is staged; libgit2 read the index, its trailer checked by the wrapper
    CHECK(gitstore::fast_file_checksums() > before);
  }
  // One flipped bit in an entry: the trailer no longer matches. Opening reads only the index's
  // structure; the status walk refuses it, with a copy of the index or without.
  std::string index = util::read_file(dir / ".git/index");
  index[20] = static_cast<char>(index[20] ^ 1);
  util::write_file_atomic(dir / ".git/index", index, util::Durability::ordinary);
  auto repo = gitstore::Repository::discover(dir);
  for (const std::vector<std::string>& leave_out : {std::vector<std::string>{}, std::vector<std::string>{"runs"}}) {
    try {
      (void)repo.dirty(leave_out);
      FAIL("a corrupt index was read");
    } catch (const Error& e) {
      CHECK(e.diagnostics().front().message.find("cannot read the index") != std::string::npos);
      CHECK(e.diagnostics().front().message.find("checksum") != std::string::npos);
      CHECK(e.diagnostics().front().hint.find("git update-index --really-refresh") != std::string::npos);
    }
  }
  // The hint's repair: git reads the index and writes it again.
  REQUIRE(std::system(("git -C " + q + " update-index --really-refresh >/dev/null").c_str()) == 0);
  CHECK(gitstore::Repository::discover(dir).dirty({"runs"}));
  fs::remove_all(dir);
}
#endif

TEST_CASE("mbedTLS's random generator, seeded on first use, draws like one seeded at once") {
  // The calls libgit2's TLS set-up makes (through the wrappers when linked statically): the
  // seed is deferred, the first draw performs it, and the output is random.
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_entropy_init(&entropy);
  mbedtls_ctr_drbg_init(&drbg);
  const auto before = gitstore::deferred_rng_seeding();
  const unsigned char personal[] = "abtrack unit test";
  REQUIRE(mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, personal, sizeof personal) == 0);
#ifdef ABTRACK_STATIC_DEPS
  CHECK(gitstore::deferred_rng_seeding().deferred == before.deferred + 1);
  CHECK(gitstore::deferred_rng_seeding().performed == before.performed);
#endif
  unsigned char a[32] = {}, b[32] = {}, zero[32] = {};
  REQUIRE(mbedtls_ctr_drbg_random(&drbg, a, sizeof a) == 0);
  REQUIRE(mbedtls_ctr_drbg_random(&drbg, b, sizeof b) == 0);
#ifdef ABTRACK_STATIC_DEPS
  CHECK(gitstore::deferred_rng_seeding().performed == before.performed + 1);
#endif
  CHECK(std::memcmp(a, zero, sizeof a) != 0);
  CHECK(std::memcmp(a, b, sizeof a) != 0);
  mbedtls_ctr_drbg_free(&drbg);
  mbedtls_entropy_free(&entropy);

  // A context freed before any draw: nothing was gathered, nothing leaks, nothing crashes.
  mbedtls_entropy_init(&entropy);
  mbedtls_ctr_drbg_init(&drbg);
  REQUIRE(mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, nullptr, 0) == 0);
  mbedtls_ctr_drbg_free(&drbg);
  mbedtls_entropy_free(&entropy);
}
