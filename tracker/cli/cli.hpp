#pragma once

namespace abtrack::cli {
// The whole program: parses arguments, runs a command, prints errors as
// "abtrack: error: ...", and returns the exit code. The only top-level catch.
int abtrack_main(int argc, char** argv);
}  // namespace abtrack::cli
