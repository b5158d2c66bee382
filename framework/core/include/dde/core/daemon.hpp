#pragma once
/// \file
/// What every daemon's main() does the same way: its threads' scheduling, and waiting for SIGINT/SIGTERM.
/// (The command line: dde/core/command_line.hpp.)

#include <optional>
#include <string>

namespace dde {

/// How the kernel schedules a daemon's threads (`--scheduling`): `batch` (SCHED_BATCH, the default of
/// dde-mqs and dde-isolate-system) or `normal` (SCHED_OTHER). A SCHED_BATCH thread that wakes does
/// not preempt the thread running on its core: the broker and the workers sharing the cores run
/// their slices out, and each wake-up of the daemon finds more messages to handle at once. Its
/// share of the CPU is the same.
inline constexpr const char* scheduling_help =
    "batch or normal: batch (SCHED_BATCH) threads do not preempt a running thread when they wake, so the "
    "broker and the workers on the same cores run their slices out and each wake-up handles more messages "
    "(manual: Operations, \"Scheduling\"); normal: the kernel's default";
/// Error text when `policy` is neither "batch" nor "normal"; nothing when it is one.
std::optional<std::string> check_scheduling(const std::string& policy);
/// The same as a command-line check: the error text, or empty when `policy` is one.
inline std::string scheduling_check(const std::string& policy) {
  return check_scheduling(policy).value_or("");
}
/// Applies `policy` to the calling thread, and so to every thread it starts afterwards: call it
/// before the daemon starts threads. Returns the error text when the kernel refused.
std::optional<std::string> apply_scheduling(const std::string& policy);

/// Names the calling thread (`/proc/<pid>/task/<tid>/comm`, top, perf): `mqs-io-0`, `mqs-dequeuer`.
/// The kernel keeps the first 15 bytes.
void name_this_thread(const std::string& name);

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
