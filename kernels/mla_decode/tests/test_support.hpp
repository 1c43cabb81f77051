// A minimal test harness for the kernel tests (no dependencies, so the standalone kernels build
// on the GPU machine has the same tests): named cases, CHECK that records and continues.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace abtrack::kernels::mla_decode::test {

inline int& failures() {
  static int count = 0;
  return count;
}
inline int& checks() {
  static int count = 0;
  return count;
}

inline std::map<std::string, std::function<void()>>& registry() {
  static std::map<std::string, std::function<void()>> cases;
  return cases;
}

struct Register {
  Register(const char* name, std::function<void()> fn) { registry()[name] = std::move(fn); }
};

// Runs the case named argv[1] (or every case); prints "N passed, N failed"; exit 0/1, or
// `skip_code` when a case called skip().
inline int run_cases(int argc, char** argv) {
  int ran = 0;
  for (auto& [name, fn] : registry()) {
    if (argc > 1 && name != argv[1]) continue;
    ++ran;
    const int before = failures();
    fn();
    std::printf("case %s: %s\n", name.c_str(), failures() == before ? "ok" : "FAILED");
  }
  if (ran == 0) {
    std::fprintf(stderr, "no test case named '%s'\n", argc > 1 ? argv[1] : "");
    return 2;
  }
  std::printf("%d passed, %d failed\n", checks() - failures(), failures());
  return failures() == 0 ? 0 : 1;
}

}  // namespace abtrack::kernels::mla_decode::test

#define MLA_CHECK(cond, ...)                                               \
  do {                                                                     \
    ++::abtrack::kernels::mla_decode::test::checks();                      \
    if (!(cond)) {                                                         \
      ++::abtrack::kernels::mla_decode::test::failures();                  \
      std::printf("%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                            \
      std::printf("\n");                                                   \
    }                                                                      \
  } while (0)

#define MLA_CONCAT2(a, b) a##b
#define MLA_CONCAT(a, b) MLA_CONCAT2(a, b)
#define MLA_TEST(name)                                                                   \
  static void MLA_CONCAT(test_fn_, __LINE__)();                                          \
  static ::abtrack::kernels::mla_decode::test::Register MLA_CONCAT(test_reg_, __LINE__)( \
      name, &MLA_CONCAT(test_fn_, __LINE__));                                            \
  static void MLA_CONCAT(test_fn_, __LINE__)()
