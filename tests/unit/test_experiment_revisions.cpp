// revision_of: never null for a plan with revisions (callers dereference it), null only for a
// plan without them, an Error for a cell whose revision was not resolved.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "experiment/revisions.hpp"
#include "plan/load.hpp"

using namespace abtrack;
namespace fs = std::filesystem;

namespace {

plan::Plan parse(const std::string& text) {
  const fs::path root = fs::temp_directory_path() / "abtrack-unit-root";
  fs::create_directories(root);
  return plan::parse_plan(text, "abtrack.yaml", root);
}

const std::string kMetrics = "command: echo\nmetrics:\n  t: {json: t}\n";

}  // namespace

TEST_CASE("revision_of: the cell's revision, null only without revisions, an error for one not resolved") {
  auto p =
      parse("experiment: r\ndoc: AB.md\nrevisions: {base: main, mine: WORKTREE}\naxes: {batch: [1, 2]}\n" + kMetrics);
  std::vector<experiment::Revision> revisions(2);
  revisions[0].name = "base";
  revisions[1].name = "mine";
  const auto cells = p.cells();
  REQUIRE(cells.size() == 4);
  for (const auto& c : cells) {
    const experiment::Revision* r = experiment::revision_of(p, revisions, c);
    REQUIRE(r != nullptr);
    CHECK(r->name == c.values.front());
  }
  // A list without `mine` (a bisect's two revisions, another plan's list): an error, not null.
  std::vector<experiment::Revision> only_base(1);
  only_base[0].name = "base";
  CHECK(experiment::revision_of(p, only_base, cells.front()) == &only_base[0]);
  try {
    experiment::revision_of(p, only_base, cells.back());
    FAIL("no error for a revision that was not resolved");
  } catch (const Error& e) {
    CHECK(e.code() == Exit::usage);
    CHECK(e.diagnostics().front().message.find("rev=mine batch=2 names no revision of this invocation") !=
          std::string::npos);
    CHECK(e.diagnostics().front().hint == "the revisions resolved: base");
  }
  CHECK_THROWS_AS(experiment::revision_of(p, revisions, plan::Cell{}), Error);

  auto plain = parse("experiment: r\ndoc: AB.md\naxes: {batch: [1, 2]}\n" + kMetrics);
  CHECK(experiment::revision_of(plain, revisions, plain.cells().front()) == nullptr);
}
