#pragma once
// The command line of a benchmark binary: --quick (a short run, what CI's bench_smoke_test runs),
// --help and --version, in the daemons' layout; any other argument is a usage error, never a run.

#include <optional>

#include "dde/core/command_line.hpp"

namespace dde::bench {

/// Parses the command line; an exit code when the program should end now (--help, --version, an
/// error), else nothing, with `quick` set.
inline std::optional<int> bench_command_line(int argc, char** argv, const char* program, const char* summary,
                                             bool& quick) {
  command_line line(program, summary);
  line.app().add_flag("--quick", quick,
                      "a short run: fewer messages and repetitions (what CI's bench_smoke_test runs)");
  return line.parse_or_exit(argc, argv);
}

}  // namespace dde::bench
