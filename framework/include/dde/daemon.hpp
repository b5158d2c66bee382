#pragma once
/// \file
/// What every daemon's main() does the same way: parse the command line, and wait for SIGINT/SIGTERM.

#include <optional>
#include <string>

#include "dde/cli.hpp"

namespace dde {

/// Parses `args` (printing `--help`, or the error with a hint) and applies `--log-level` when the
/// program has one. Returns the exit code when the program should stop now, nullopt to go on.
std::optional<int> parse_command_line(cli& args, int argc, char** argv, const char* program);

/// Blocks SIGINT and SIGTERM in this thread and in every thread it starts afterwards; call it first.
void block_stop_signals();

/// Waits for SIGINT or SIGTERM (after `block_stop_signals`) and returns which.
int wait_for_stop_signal();

/// systemd's readiness protocol (Type=notify, sd_notify(3)): sends `state` (e.g. "READY=1\nSTATUS=...")
/// to the socket in $NOTIFY_SOCKET. Without it (not under systemd) nothing happens. Returns whether
/// it was sent.
bool notify_systemd(const std::string& state);
/// READY=1 with a STATUS= line: the daemon listens and serves.
inline bool notify_ready(const std::string& status) { return notify_systemd("READY=1\nSTATUS=" + status); }
/// STOPPING=1: the daemon drains and stops.
inline bool notify_stopping() { return notify_systemd("STOPPING=1"); }

}  // namespace dde
