#include "cli/cli.hpp"

int main(int argc, char** argv) { return abtrack::cli::abtrack_main(argc, argv); }
