// What abtrack puts in place of parts of libgit2's dependencies it never uses, at link time.
// Only when libgit2 is linked statically (cmake/abtrack_link.cmake): the --wrap options there
// send libgit2's calls of the wrapped mbedTLS functions to the __wrap_ functions here, and the
// GSSAPI definitions replace a shared library. Each costs abtrack start-up time (part of every
// step) in code that only a network transport (fetch, push, clone) would use, and
// abtrack has none; each fails or stays secure, never crashes, should that code ever run.
//
// The linker takes this archive member only because repository.cpp's ensure_init() calls
// libgit2_overrides_linked() below: without that reference libgit2.a's calls, resolved after
// the gitstore archive has been scanned, would not bring it in.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

#ifdef ABTRACK_GIT2_STATIC
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
// SHA1_Init/_Update/_Final are deprecated in OpenSSL 3 in favour of EVP, which is what costs
// (see __wrap_git_hash_buf).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#endif

#include "gitstore/repository.hpp"

// libgit2 1.5 with the mbedTLS backend (Debian's) parses the whole system CA bundle in
// git_libgit2_init (git_mbedtls_stream_global_init -> git_mbedtls__set_cert_location ->
// mbedtls_x509_crt_parse_file): ~55 million instructions, ~5 ms, 70% of a whole step. abtrack
// never fetches or pushes, so it needs no certificate. When libgit2 is linked statically,
// cmake/abtrack_link.cmake links with --wrap for these two functions, which sends libgit2's calls
// here: they load nothing and report success, so libgit2 initialises with an empty CA chain.
// Should anything ever open a TLS connection through this libgit2, verification would fail
// against the empty chain (never succeed without checking).
namespace {
std::atomic<int> g_ca_loads_skipped{0};
std::atomic<int> g_ssh_inits_deferred{0};
}  // namespace
extern "C" int __wrap_mbedtls_x509_crt_parse_file(void* /*chain*/, const char* /*path*/) {
  g_ca_loads_skipped.fetch_add(1, std::memory_order_relaxed);
  return 0;
}
extern "C" int __wrap_mbedtls_x509_crt_parse_path(void* /*chain*/, const char* /*path*/) {
  g_ca_loads_skipped.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

#ifdef ABTRACK_GIT2_STATIC
// libgit2's HTTP "Negotiate" authentication (transports/auth_negotiate.c) is its only user of
// GSSAPI, and Debian ships libgssapi_krb5 without an archive: linked against it, every abtrack
// start loaded and relocated seven shared objects (libgssapi_krb5, libkrb5, libk5crypto,
// libcom_err, libkrb5support, libkeyutils, libresolv; ~0.8 ms of `abtrack --version`). abtrack
// never talks to a network (no remote, fetch, push or clone), so that code never runs. These are
// abtrack's definitions of exactly the GSSAPI symbols libgit2.a references (`nm -u libgit2.a |
// grep -i gss`); they are ABI-compatible with MIT krb5's <gssapi/gssapi.h> (not installed here).
// Should Negotiate ever be attempted, it fails cleanly: gss_indicate_mechs reports
// GSS_S_FAILURE and libgit2 then reports "could not query mechanisms: unknown negotiate error",
// as it does on a host without Kerberos; the functions that would produce a name, a context or
// a status text fail the same way, and the release functions release nothing (there is never
// anything to release). Defined only when libgit2 is linked statically: against the shared
// libgit2 they would interpose on the real library's.
namespace {
using OM_uint32 = std::uint32_t;
struct gss_OID_desc {
  OM_uint32 length;
  void* elements;
};
struct gss_OID_set_desc {
  std::size_t count;
  gss_OID_desc* elements;
};
struct gss_buffer_desc {
  std::size_t length;
  void* value;
};
constexpr OM_uint32 kGssComplete = 0;
constexpr OM_uint32 kGssFailure = 13u << 16;  // GSS_S_FAILURE: a routine error, "unspecified failure"
// 1.2.840.113554.1.2.1.4, as in MIT krb5 (RFC 2743 §4.1).
gss_OID_desc g_nt_hostbased_service{10, const_cast<char*>("\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04")};
OM_uint32 gss_unavailable(OM_uint32* minor) {
  if (minor) *minor = 0;
  return kGssFailure;
}
// What every release function does: there is never anything to release, so empty the handle.
template <class T>
OM_uint32 released(OM_uint32* minor, T* handle, T empty) {
  if (handle) *handle = empty;
  if (minor) *minor = 0;
  return kGssComplete;
}
}  // namespace
extern "C" {
gss_OID_desc* GSS_C_NT_HOSTBASED_SERVICE = &g_nt_hostbased_service;
OM_uint32 gss_indicate_mechs(OM_uint32* minor, gss_OID_set_desc** mechs) {
  if (mechs) *mechs = nullptr;
  return gss_unavailable(minor);
}
OM_uint32 gss_import_name(OM_uint32* minor, gss_buffer_desc*, gss_OID_desc*, void** name) {
  if (name) *name = nullptr;
  return gss_unavailable(minor);
}
OM_uint32 gss_init_sec_context(OM_uint32* minor, void*, void** context, void*, gss_OID_desc*, OM_uint32, OM_uint32,
                               void*, gss_buffer_desc*, gss_OID_desc** actual_mech, gss_buffer_desc* output,
                               OM_uint32* ret_flags, OM_uint32* time_rec) {
  if (actual_mech) *actual_mech = nullptr;
  if (output) *output = {0, nullptr};
  if (ret_flags) *ret_flags = 0;
  if (time_rec) *time_rec = 0;
  (void)context;  // left as the caller set it (GSS_C_NO_CONTEXT on a first call)
  return gss_unavailable(minor);
}
OM_uint32 gss_display_status(OM_uint32* minor, OM_uint32, int, gss_OID_desc*, OM_uint32* message_context,
                             gss_buffer_desc* text) {
  if (message_context) *message_context = 0;
  if (text) *text = {0, nullptr};
  return gss_unavailable(minor);
}
OM_uint32 gss_delete_sec_context(OM_uint32* minor, void** context, gss_buffer_desc* output) {
  if (output) *output = {0, nullptr};
  return released<void*>(minor, context, nullptr);
}
OM_uint32 gss_release_name(OM_uint32* minor, void** name) { return released<void*>(minor, name, nullptr); }
OM_uint32 gss_release_buffer(OM_uint32* minor, gss_buffer_desc* buffer) {
  return released<gss_buffer_desc>(minor, buffer, {0, nullptr});
}
OM_uint32 gss_release_oid_set(OM_uint32* minor, gss_OID_set_desc** set) {
  return released<gss_OID_set_desc*>(minor, set, nullptr);
}
}  // extern "C"
#endif  // ABTRACK_GIT2_STATIC

#ifdef ABTRACK_GIT2_STATIC
// mbedTLS's random generator, seeded on first use rather than at git_libgit2_init.
// git_mbedtls_stream_global_init (libgit2 1.5, streams/mbedtls.c; read here from Debian's
// libgit2.a with objdump, the source is not installed) builds the TLS configuration once per
// process: mbedtls_entropy_init (which, with Debian's MBEDTLS_HAVEGE_C, runs HAVEGE's
// timing-loop fill), mbedtls_ctr_drbg_init, then mbedtls_ctr_drbg_seed(drbg,
// mbedtls_entropy_func, entropy, NULL, 0) (which gathers entropy: getrandom, HAVEGE again, the
// cycle counter), failing the whole libgit2 initialisation if the seed fails; it then hands
// mbedtls_ctr_drbg_random and the DRBG to mbedtls_ssl_conf_rng, and a TLS stream draws from it
// during its handshake. ~0.2 ms of every abtrack start, for a generator abtrack never draws from.
//
// The wrappers defer that work to the first draw; they change when it happens, not what it is:
// - mbedtls_entropy_init: zeroes the context (no source registered yet) and remembers it;
//   mbedtls_entropy_func (the only way the linked code gathers from it) initialises it for real
//   first. mbedtls_entropy_free of a context never initialised frees nothing.
// - mbedtls_ctr_drbg_seed: remembers the arguments (personalisation string copied) and reports
//   success; mbedtls_ctr_drbg_random (the only way the linked code draws: libgit2's TLS
//   configuration and PSA crypto) performs the real seed first, under a lock, and on failure
//   returns the seed's error, so a TLS handshake fails cleanly (no output from an unseeded
//   generator, ever). mbedtls_ctr_drbg_init and _free forget a deferred seed of that context.
// These are every ctr_drbg and entropy function the linked code calls from outside mbedTLS's
// own ctr_drbg.c and entropy.c (`nm -u` of libgit2.a and of libmbedcrypto.a: libgit2's
// mbedtls.c and psa_crypto*.c); calls inside those two files are not redirected, as intended.
extern "C" {
int __real_mbedtls_ctr_drbg_seed(mbedtls_ctr_drbg_context*, int (*)(void*, unsigned char*, size_t), void*,
                                 const unsigned char*, size_t);
int __real_mbedtls_ctr_drbg_random(void*, unsigned char*, size_t);
void __real_mbedtls_ctr_drbg_init(mbedtls_ctr_drbg_context*);
void __real_mbedtls_ctr_drbg_free(mbedtls_ctr_drbg_context*);
void __real_mbedtls_entropy_init(mbedtls_entropy_context*);
void __real_mbedtls_entropy_free(mbedtls_entropy_context*);
int __real_mbedtls_entropy_func(void*, unsigned char*, size_t);
}

namespace {
struct PendingSeed {
  mbedtls_ctr_drbg_context* drbg = nullptr;
  int (*f_entropy)(void*, unsigned char*, size_t) = nullptr;
  void* p_entropy = nullptr;
  unsigned char custom[MBEDTLS_CTR_DRBG_MAX_SEED_INPUT] = {};
  size_t custom_len = 0;
};
// A few slots: libgit2 seeds one generator per process (PSA crypto one more, if it were used).
// When all are taken, a seed is performed at once, as without the wrappers.
constexpr int kSlots = 4;
// Recursive: the real seed, run under it, calls the (wrapped) entropy function, which takes it.
std::recursive_mutex g_rng_mutex;
PendingSeed g_pending_seeds[kSlots];
mbedtls_entropy_context* g_pending_entropy[kSlots] = {};
std::atomic<int> g_pending_count{0};  // seeds and entropy contexts still deferred
std::atomic<int> g_seeds_deferred{0};
std::atomic<int> g_seeds_performed{0};

PendingSeed* find_seed(const void* drbg) {
  for (auto& s : g_pending_seeds)
    if (drbg && s.drbg == drbg) return &s;
  return nullptr;
}
mbedtls_entropy_context** find_entropy(const void* ctx) {
  for (auto& e : g_pending_entropy)
    if (ctx && e == ctx) return &e;
  return nullptr;
}
void forget_seed(const void* drbg) {
  if (PendingSeed* s = find_seed(drbg)) {
    *s = PendingSeed{};
    g_pending_count.fetch_sub(1);
  }
}
// Caller holds g_rng_mutex.
void init_entropy_if_deferred(const void* ctx) {
  if (auto** e = find_entropy(ctx)) {
    mbedtls_entropy_context* c = *e;
    *e = nullptr;
    g_pending_count.fetch_sub(1);
    __real_mbedtls_entropy_init(c);
  }
}
}  // namespace

extern "C" {
void __wrap_mbedtls_entropy_init(mbedtls_entropy_context* ctx) {
  std::lock_guard lock(g_rng_mutex);
  std::memset(static_cast<void*>(ctx), 0, sizeof *ctx);
  if (find_entropy(ctx)) return;  // the same memory again, still deferred
  for (auto& e : g_pending_entropy)
    if (!e) {
      e = ctx;
      g_pending_count.fetch_add(1);
      return;
    }
  __real_mbedtls_entropy_init(ctx);
}
void __wrap_mbedtls_entropy_free(mbedtls_entropy_context* ctx) {
  {
    std::lock_guard lock(g_rng_mutex);
    if (auto** e = find_entropy(ctx)) {  // never initialised: nothing to free
      *e = nullptr;
      g_pending_count.fetch_sub(1);
      return;
    }
  }
  __real_mbedtls_entropy_free(ctx);
}
int __wrap_mbedtls_entropy_func(void* ctx, unsigned char* output, size_t len) {
  if (g_pending_count.load() > 0) {
    std::lock_guard lock(g_rng_mutex);
    init_entropy_if_deferred(ctx);
  }
  return __real_mbedtls_entropy_func(ctx, output, len);
}
void __wrap_mbedtls_ctr_drbg_init(mbedtls_ctr_drbg_context* ctx) {
  {
    std::lock_guard lock(g_rng_mutex);
    forget_seed(ctx);
  }
  __real_mbedtls_ctr_drbg_init(ctx);
}
int __wrap_mbedtls_ctr_drbg_seed(mbedtls_ctr_drbg_context* ctx, int (*f_entropy)(void*, unsigned char*, size_t),
                                 void* p_entropy, const unsigned char* custom, size_t len) {
  {
    std::lock_guard lock(g_rng_mutex);
    forget_seed(ctx);  // a second seed of the same context replaces the first
    if (ctx && f_entropy && len <= sizeof PendingSeed::custom && (custom || len == 0))
      for (auto& s : g_pending_seeds)
        if (!s.drbg) {
          s.drbg = ctx;
          s.f_entropy = f_entropy;
          s.p_entropy = p_entropy;
          if (len) std::memcpy(s.custom, custom, len);
          s.custom_len = len;
          g_pending_count.fetch_add(1);
          g_seeds_deferred.fetch_add(1);
          return 0;
        }
  }
  return __real_mbedtls_ctr_drbg_seed(ctx, f_entropy, p_entropy, custom, len);
}
int __wrap_mbedtls_ctr_drbg_random(void* p_rng, unsigned char* output, size_t output_len) {
  if (g_pending_count.load() > 0) {
    std::lock_guard lock(g_rng_mutex);
    if (PendingSeed* s = find_seed(p_rng)) {
      // The seed calls the entropy source, which initialises a deferred entropy context itself
      // when it is (the wrapped) mbedtls_entropy_func; done here as well for any other source.
      init_entropy_if_deferred(s->p_entropy);
      int rc = __real_mbedtls_ctr_drbg_seed(s->drbg, s->f_entropy, s->p_entropy, s->custom_len ? s->custom : nullptr,
                                            s->custom_len);
      if (rc != 0) return rc;  // still deferred: no draw is ever made from an unseeded generator
      forget_seed(p_rng);
      g_seeds_performed.fetch_add(1);
    }
  }
  return __real_mbedtls_ctr_drbg_random(p_rng, output, output_len);
}
void __wrap_mbedtls_ctr_drbg_free(mbedtls_ctr_drbg_context* ctx) {
  {
    std::lock_guard lock(g_rng_mutex);
    forget_seed(ctx);
  }
  __real_mbedtls_ctr_drbg_free(ctx);
}
}  // extern "C"
#endif  // ABTRACK_GIT2_STATIC

#ifdef ABTRACK_GIT2_STATIC
// libssh2, initialised on first use rather than at git_libgit2_init. libgit2's
// git_transport_ssh_global_init calls libssh2_init(0), whose OpenSSL back end then loads and
// registers every built-in OpenSSL engine (ENGINE_load_builtin_engines,
// ENGINE_register_all_complete): ~0.96 M instructions, a quarter of an `abtrack status`, for SSH
// transports abtrack never opens. The wrapper does nothing and reports success. libssh2 itself
// initialises when a session is first made (libssh2_session_init_ex and its OpenSSL key code
// call _libssh2_init_if_needed, inside libssh2's archive, which this does not redirect; read from
// Debian's libssh2.a 1.10 with objdump), and libgit2's libssh2_exit at shutdown returns at once
// when libssh2 was never initialised, or undoes that lazy initialisation as it undid this one.
extern "C" int __wrap_libssh2_init(int /*flags*/) {
  g_ssh_inits_deferred.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// libgit2's checksums of whole files, git_hash_buf: the index's trailer, checked on every read
// of the index (parse_index), a config file's content (to notice that it changed) and a
// commit-graph's trailer. libgit2 computes them with its collision-detecting SHA-1 (SHA1DC),
// ~0.25 ms for the 90 KB index of 1000 runs, where OpenSSL's SHA-1 (the CPU's SHA instructions
// where it has them) takes ~0.05 ms. Collision detection protects object ids from crafted
// collisions (SHAttered); these checksums only tell a torn or corrupted file, and git itself
// does not check the index's trailer when it reads it. Object ids never pass through here:
// libgit2 hashes objects with git_hash_vec (inside hash.c, where calls are not redirected) and
// through streams (git_hash_update, not wrapped), so they keep SHA1DC. For any input that is not
// a crafted collision both give the same 20 bytes; a unit test compares them.
extern "C" int __real_git_hash_buf(unsigned char* out, const void* data, size_t len, int algorithm);
namespace {
constexpr int kGitHashSha1 = 1;  // GIT_HASH_ALGORITHM_SHA1 in libgit2 1.5's hash.h
std::atomic<int> g_fast_checksums{0};
}  // namespace
extern "C" int __wrap_git_hash_buf(unsigned char* out, const void* data, size_t len, int algorithm) {
  if (algorithm != kGitHashSha1) return __real_git_hash_buf(out, data, len, algorithm);
  // The low-level interface: the one-shot SHA1() of OpenSSL 3 loads its providers and
  // configuration first (~1 ms).
  SHA_CTX ctx;
  if (SHA1_Init(&ctx) != 1 || SHA1_Update(&ctx, data, len) != 1 || SHA1_Final(out, &ctx) != 1)
    return __real_git_hash_buf(out, data, len, algorithm);
  g_fast_checksums.fetch_add(1, std::memory_order_relaxed);
  return 0;
}
#endif  // ABTRACK_GIT2_STATIC

namespace abtrack::gitstore {

int ca_certificate_loads_skipped() { return g_ca_loads_skipped.load(std::memory_order_relaxed); }

DeferredSeeding deferred_rng_seeding() {
#ifdef ABTRACK_GIT2_STATIC
  return {g_seeds_deferred.load(), g_seeds_performed.load()};
#else
  return {0, 0};
#endif
}

int libssh2_inits_deferred() { return g_ssh_inits_deferred.load(std::memory_order_relaxed); }

int fast_file_checksums() {
#ifdef ABTRACK_GIT2_STATIC
  return g_fast_checksums.load(std::memory_order_relaxed);
#else
  return 0;
#endif
}

void libgit2_overrides_linked() {}

}  // namespace abtrack::gitstore
