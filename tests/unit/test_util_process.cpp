#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <string_view>

#include "util/process.hpp"

using namespace abtrack;

TEST_CASE("stdout and stderr are captured separately, stdin is /dev/null") {
  util::ProcessSpec s;
  s.shell_command = "echo out; echo err >&2; cat; exit 3";
  auto r = util::run_process(s);
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("echo gets each stream's bytes as they are read, then an end, and the capture is unchanged") {
  util::ProcessSpec s;
  s.shell_command = "printf 'a\\nb'; printf 'e1\\n' >&2; sleep 0.05; printf 'c\\n'";
  std::string seen[3];
  int ends[3] = {0, 0, 0};
  s.echo = [&](int stream, std::string_view bytes) {
    REQUIRE((stream == 1 || stream == 2));
    if (bytes.empty()) ++ends[stream];
    seen[stream] += bytes;
  };
  auto r = util::run_process(s);
  CHECK(r.exit_code == 0);
  CHECK(seen[1] == "a\nbc\n");
  CHECK(seen[2] == "e1\n");
  CHECK(r.out == seen[1]);
  CHECK(r.err == seen[2]);
  CHECK(ends[1] == 1);
  CHECK(ends[2] == 1);
}

TEST_CASE("a timeout kills the whole process group, grandchildren included") {
  util::ProcessSpec s;
  s.shell_command = "sleep 30 & sleep 31; echo never";
  s.timeout_s = 0.3;
  s.kill_grace_s = 0.2;
  auto t0 = std::chrono::steady_clock::now();
  auto r = util::run_process(s);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.timed_out);
  CHECK(r.signal.has_value());
  CHECK(took < 5);
  CHECK(r.out.empty());
}

TEST_CASE("a background child holding stdout does not keep the run alive") {
  util::ProcessSpec s;
  s.shell_command = "(sleep 20; echo late) & echo early";
  auto t0 = std::chrono::steady_clock::now();
  auto r = util::run_process(s);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.exit_code == 0);
  CHECK(r.out == "early\n");
  CHECK(took < 5);
}

TEST_CASE("capture keeps the tail and counts every byte") {
  util::ProcessSpec s;
  s.shell_command = "head -c 3000000 /dev/zero | tr '\\0' 'x'; echo END";
  s.capture_limit = 1000;
  auto r = util::run_process(s);
  CHECK(r.out_bytes == 3000004);
  CHECK(r.out.size() == 1000);
  CHECK(r.out.ends_with("xxEND\n"));
}

TEST_CASE("signals are reported") {
  util::ProcessSpec s;
  s.shell_command = "kill -SEGV $$";
  auto r = util::run_process(s);
  REQUIRE(r.signal);
  CHECK(util::signal_name(*r.signal) == "SIGSEGV");
}
