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

TEST_CASE("whole-file checksums: OpenSSL's SHA-1 gives libgit2's SHA1DC bytes") {
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

namespace {
// What `git -C <scratch> ARGS` prints, without the trailing newline.
std::string git_output(const GitScratch& scratch, const std::string& args) {
  std::string out;
  FILE* p = ::popen(("git -C " + scratch.quoted + " " + args).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

TEST_CASE("a commit into a large folder keeps every file, also with one deeper inside it") {
  GitScratch scratch("bigfolder");
  {
    auto repo = gitstore::Repository::discover(scratch.dir);
    auto commit = [&](std::vector<std::pair<std::string, std::string>> files) {
      repo.commit([&](const gitstore::TreeView&) {
        gitstore::Change c;
        c.message = "files\n";
        c.files = files;
        return c;
      });
    };
    std::vector<std::pair<std::string, std::string>> many;
    for (int i = 1; i <= 150; ++i) many.emplace_back(fmt::format("runs/x/{:04}.json", i), fmt::format("{}\n", i));
    commit(many);  // an empty tree before: libgit2 builds it
    commit({{"runs/x/0151.json", "151\n"}, {"runs/x/sub/deep.txt", "deep\n"}, {"AB.md", "doc\n"}});
    commit({{"runs/x/0152.json", "152\n"}, {"runs/x/0001.json", "one again\n"}});
    auto read = [&](const std::string& p) { return repo.with_head([&](const gitstore::TreeView& t) { return t.read(p); }); };
    CHECK(read("runs/x/0150.json") == std::string("150\n"));
    CHECK(read("runs/x/0151.json") == std::string("151\n"));
    CHECK(read("runs/x/sub/deep.txt") == std::string("deep\n"));
    CHECK(read("runs/x/0152.json") == std::string("152\n"));
    CHECK(read("runs/x/0001.json") == std::string("one again\n"));
    CHECK(read("AB.md") == std::string("doc\n"));
    CHECK(repo.with_head([](const gitstore::TreeView& t) { return t.list("runs/x").size(); }) == 152u);
  }
  // git agrees: the trees are well formed and the checkout matches.
  CHECK(scratch.git("fsck --strict --no-progress >/dev/null 2>&1"));
  CHECK(std::system(("test -z \"$(git -C " + scratch.quoted + " status --porcelain)\"").c_str()) == 0);
}

TEST_CASE("a commit's index update keeps what the user staged, and leaves no file of its own") {
  GitScratch scratch("index");
  util::write_file_atomic(scratch.dir / "kept.txt", "a\n", util::Durability::ordinary);
  REQUIRE(scratch.git("add kept.txt && git -C " + scratch.quoted + " commit -qm first"));
  util::write_file_atomic(scratch.dir / "kept.txt", "b\n", util::Durability::ordinary);
  util::write_file_atomic(scratch.dir / "notes.txt", "n\n", util::Durability::ordinary);
  REQUIRE(scratch.git("add kept.txt notes.txt"));
  {
    auto repo = gitstore::Repository::discover(scratch.dir);
    auto done = repo.commit([](const gitstore::TreeView&) {
      gitstore::Change c;
      c.message = "run\n";
      c.files = {{"runs/x/0001.json", "{}\n"}, {"AB.md", "doc\n"}};
      return c;
    });
    CHECK(done.kept_edits.empty());
  }
  CHECK(git_output(scratch, "show --name-only --format= HEAD") == "AB.md\nruns/x/0001.json");
  CHECK(git_output(scratch, "status --porcelain") == "M  kept.txt\nA  notes.txt");
  CHECK(git_output(scratch, "show :kept.txt") == "b");
  // The index's cache tree agrees with its entries: git writes the same tree from an index
  // made of the entries alone.
  const std::string fresh = "GIT_INDEX_FILE=" + scratch.quoted + "/.git/fresh-index git -C " + scratch.quoted;
  CHECK(git_output(scratch, "write-tree") ==
        git_output(scratch, "ls-files -s | " + fresh + " update-index --index-info && " + fresh + " write-tree"));
  for (const char* name : {"index.lock", "abtrack-index", "abtrack-index.lock"}) CHECK_FALSE(fs::exists(scratch.dir / ".git" / name));
}

TEST_CASE("a damaged index is refused when the repository is opened, with the repair") {
  GitScratch scratch("torn");
  util::write_file_atomic(scratch.dir / "f", "x\n", util::Durability::ordinary);
  REQUIRE(scratch.git("add f"));
  // One flipped bit in an entry: the trailer no longer matches.
  std::string index = util::read_file(scratch.dir / ".git/index");
  index[20] = static_cast<char>(index[20] ^ 1);
  util::write_file_atomic(scratch.dir / ".git/index", index, util::Durability::ordinary);
  try {
    (void)gitstore::Repository::discover(scratch.dir);
    FAIL("a damaged index was read");
  } catch (const Error& e) {
    CHECK(e.diagnostics().front().message.find("cannot read the index") != std::string::npos);
    CHECK(e.diagnostics().front().message.find("checksum") != std::string::npos);
    CHECK(e.diagnostics().front().hint.find("git update-index --really-refresh") != std::string::npos);
  }
  // The hint's repair: git reads the index and writes it again.
  REQUIRE(scratch.git("update-index --really-refresh >/dev/null"));
  CHECK(gitstore::Repository::discover(scratch.dir).dirty({}));
}
