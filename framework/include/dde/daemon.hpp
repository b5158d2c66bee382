#pragma once
/// \file
/// What every daemon's main() does the same way: parse the command line, and wait for SIGINT/SIGTERM.

#include <optional>

#include "dde/cli.hpp"

namespace dde {

/// Parses `args` (printing `--help`, or the error with a hint) and applies `--log-level` when the
/// program has one. Returns the exit code when the program should stop now, nullopt to go on.
std::optional<int> parse_command_line(cli& args, int argc, char** argv, const char* program);

/// Blocks SIGINT and SIGTERM in this thread and in every thread it starts afterwards; call it first.
void block_stop_signals();

/// Waits for SIGINT or SIGTERM (after `block_stop_signals`) and returns which.
int wait_for_stop_signal();

}  // namespace dde
