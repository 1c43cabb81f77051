# How abtrack links its libraries. Start-up is part of every step's cost: resolving 23 shared
# objects took ~3 ms before `main`. Where Debian ships the archives (libgit2-dev, libmbedtls-dev,
# libssh2-1-dev, libssl-dev, libpcre2-dev, zlib1g-dev, libhttp-parser-dev, libyaml-cpp-dev),
# libgit2, its dependencies and yaml-cpp are linked statically, fmt is used header-only and
# libstdc++/libgcc are linked statically (not under the sanitizers). What stays shared is libc,
# libm and libgit2's GSSAPI library (libgssapi_krb5, which Debian ships without an archive, with
# the Kerberos libraries it loads). Without the archives abtrack links the shared libraries.
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
# Debian's libgit2.a calls GSSAPI (HTTP Negotiate authentication); its shared library has no
# development link (libgssapi_krb5.so) unless libkrb5-dev is installed.
find_library(ABTRACK_GSSAPI NAMES gssapi_krb5 libgssapi_krb5.so.2)
if(NOT ABTRACK_GSSAPI)
  set(ABTRACK_STATIC_DEPS OFF)
endif()

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
  target_link_libraries(abtrack_git2 INTERFACE ${_git2_chain} ${ABTRACK_GSSAPI} pthread dl rt)
  target_include_directories(abtrack_git2 INTERFACE ${LIBGIT2_INCLUDE_DIRS})
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
