# How abtrack links its libraries. Start-up is part of every step's cost:
# resolving 23 shared objects took ~3 ms before `main`. Where Debian ships the archives
# (libgit2-dev, libmbedtls-dev, libssh2-1-dev, libssl-dev, libpcre2-dev, zlib1g-dev,
# libhttp-parser-dev, libyaml-cpp-dev), libgit2, its dependencies and yaml-cpp are linked
# statically, fmt is used header-only and libstdc++/libgcc are linked statically (not under the
# sanitizers): what stays shared is libc and libm. libgit2's Kerberos (GSSAPI) chain, which Debian
# ships without archives (7 more shared objects, ~0.4 ms of every start), is not linked: its only
# user in libgit2 is HTTP Negotiate authentication, which abtrack (no network) never reaches, and
# tracker/gitstore/link_overrides.cpp defines the gss_* symbols libgit2 references, failing
# cleanly. Without the archives abtrack links the shared libraries (GSSAPI included) and
# defines none of these.
#
# Defines: abtrack_git2, abtrack_yaml, abtrack_fmt, abtrack_mbedcrypto (INTERFACE targets) and
# ABTRACK_STATIC_DEPS (ON when the archives were found).
option(ABTRACK_LINK_STATIC "Link libgit2, its dependencies and yaml-cpp statically when the archives exist" ON)

set(_abtrack_archives git2 mbedtls mbedx509 mbedcrypto http_parser ssh2 crypto pcre2-8 z yaml-cpp)
set(ABTRACK_STATIC_DEPS ${ABTRACK_LINK_STATIC})
foreach(_lib IN LISTS _abtrack_archives)
  find_library(ABTRACK_ARCHIVE_${_lib} NAMES lib${_lib}.a)
  if(NOT ABTRACK_ARCHIVE_${_lib})
    set(ABTRACK_STATIC_DEPS OFF)
  endif()
endforeach()

add_library(abtrack_git2 INTERFACE)
add_library(abtrack_yaml INTERFACE)
add_library(abtrack_fmt INTERFACE)
add_library(abtrack_mbedcrypto INTERFACE)
if(ABTRACK_STATIC_DEPS)
  message(STATUS "abtrack: linking libgit2, its dependencies and yaml-cpp statically")
  set(_git2_chain)
  foreach(_lib git2 mbedtls mbedx509 mbedcrypto http_parser ssh2 crypto pcre2-8 z)
    list(APPEND _git2_chain ${ABTRACK_ARCHIVE_${_lib}})
  endforeach()
  # No libgssapi_krb5: libgit2's GSSAPI calls (HTTP Negotiate authentication, never used by
  # abtrack) resolve to gitstore/repository.cpp's definitions, which fail cleanly.
  target_link_libraries(abtrack_git2 INTERFACE ${_git2_chain} pthread dl rt)
  target_include_directories(abtrack_git2 INTERFACE ${LIBGIT2_INCLUDE_DIRS})
  target_compile_definitions(abtrack_git2 INTERFACE ABTRACK_GIT2_STATIC)
  # abtrack never talks to a network, so the CA bundle libgit2 parses at git_libgit2_init
  # (~5 ms: mbedTLS decodes every certificate) is dead weight, and so is seeding mbedTLS's random
  # generator there (~0.2 ms) and libssh2's start-up, which loads every OpenSSL engine (~0.25 ms):
  # gitstore/link_overrides.cpp supplies the wrappers that load no certificate, seed on first use
  # and leave libssh2 to initialise itself when a session is made, and compute libgit2's
  # whole-file checksums (never object ids) with OpenSSL's SHA-1 (see the comments there).
  set(_abtrack_wrapped mbedtls_x509_crt_parse_file mbedtls_x509_crt_parse_path
      mbedtls_entropy_init mbedtls_entropy_free mbedtls_entropy_func
      mbedtls_ctr_drbg_init mbedtls_ctr_drbg_seed mbedtls_ctr_drbg_random mbedtls_ctr_drbg_free
      libssh2_init git_hash_buf)
  list(TRANSFORM _abtrack_wrapped PREPEND "-Wl,--wrap=")
  target_link_options(abtrack_git2 INTERFACE ${_abtrack_wrapped})
  target_link_libraries(abtrack_yaml INTERFACE ${ABTRACK_ARCHIVE_yaml-cpp})
  target_include_directories(abtrack_yaml INTERFACE $<TARGET_PROPERTY:yaml-cpp,INTERFACE_INCLUDE_DIRECTORIES>)
  target_link_libraries(abtrack_fmt INTERFACE fmt::fmt-header-only)
  target_link_libraries(abtrack_mbedcrypto INTERFACE ${ABTRACK_ARCHIVE_mbedcrypto})
else()
  message(STATUS "abtrack: linking the shared libraries (archives not found or ABTRACK_LINK_STATIC=OFF)")
  target_link_libraries(abtrack_git2 INTERFACE PkgConfig::LIBGIT2)
  target_link_libraries(abtrack_yaml INTERFACE yaml-cpp)
  target_link_libraries(abtrack_fmt INTERFACE fmt::fmt)
  target_link_libraries(abtrack_mbedcrypto INTERFACE mbedcrypto)
endif()

# Fewer relocations and less symbol lookup at start-up, whatever is shared.
add_link_options(-Wl,-O1 -Wl,--as-needed)
# The abtrack executable, except under the sanitizers (their runtimes expect the shared C++
# runtime and a PIE): the C++ runtime statically too, and not position-independent, which
# spares the loader ~25,000 relative relocations and the copy-on-write faults they cause
# (~0.6 ms of every invocation here). abtrack is a local command-line tool; its libraries are
# still loaded at random addresses.
if(ABTRACK_STATIC_DEPS AND NOT ABTRACK_SANITIZE AND NOT ABTRACK_ENABLE_FUZZ)
  set(ABTRACK_EXE_LINK_OPTIONS -static-libstdc++ -static-libgcc -no-pie)
endif()
