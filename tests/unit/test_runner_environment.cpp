#include <doctest/doctest.h>

#include <unistd.h>

#include <thread>

#include "runner/environment.hpp"

using namespace abtrack;

TEST_CASE("environment: the probe started early is the one a record gets, read once per process") {
  runner::start_environment_probe();
  runner::start_environment_probe();  // a second start reuses the first probe
  const runner::Environment& a = runner::environment();
  const runner::Environment& b = runner::environment();
  CHECK(&a == &b);
  const runner::Environment direct = runner::probe_environment();
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof host - 1) == 0);
  CHECK(a.host == host);
  CHECK(a.host == direct.host);
  CHECK(a.os == direct.os);
  CHECK(a.cpus == std::thread::hardware_concurrency());
  CHECK(a.gpus.size() == direct.gpus.size());
  CHECK(a.driver == direct.driver);
  CHECK(runner::gpu_kinds(a.gpus) == runner::gpu_kinds(direct.gpus));
}
