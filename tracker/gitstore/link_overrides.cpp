// What abtrack puts in place of parts of libgit2's dependencies it never uses, at link time.
// Only when libgit2 is linked statically (cmake/abtrack_link.cmake): the --wrap options there
// send libgit2's calls of the wrapped mbedTLS functions to the __wrap_ functions here, and the
// GSSAPI definitions replace a shared library. Each costs abtrack start-up time (docs/
// PERFORMANCE.md §2) in code that only a network transport (fetch, push, clone) would use, and
// abtrack has none; each fails or stays secure, never crashes, should that code ever run.
//
// The linker takes this archive member only because repository.cpp's ensure_init() calls
// libgit2_overrides_linked() below: without that reference libgit2.a's calls, resolved after
// the gitstore archive has been scanned, would not bring it in.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

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
  if (context) *context = nullptr;
  if (output) *output = {0, nullptr};
  if (minor) *minor = 0;
  return kGssComplete;
}
OM_uint32 gss_release_name(OM_uint32* minor, void** name) {
  if (name) *name = nullptr;
  if (minor) *minor = 0;
  return kGssComplete;
}
OM_uint32 gss_release_buffer(OM_uint32* minor, gss_buffer_desc* buffer) {
  if (buffer) *buffer = {0, nullptr};
  if (minor) *minor = 0;
  return kGssComplete;
}
OM_uint32 gss_release_oid_set(OM_uint32* minor, gss_OID_set_desc** set) {
  if (set) *set = nullptr;
  if (minor) *minor = 0;
  return kGssComplete;
}
}  // extern "C"
#endif  // ABTRACK_GIT2_STATIC

namespace abtrack::gitstore {

int ca_certificate_loads_skipped() { return g_ca_loads_skipped.load(std::memory_order_relaxed); }

void libgit2_overrides_linked() {}

}  // namespace abtrack::gitstore
