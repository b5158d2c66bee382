#pragma once
// The isolate systems as operating-system processes, behind an interface: the system manager
// starts, signals and looks for them through it, so its own logic (hello, requests, restarts with
// backoff, redeploys) is tested with a fake table and no process at all.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace dde::activator {

class process_table {
 public:
  virtual ~process_table() = default;
  /// Starts `argv` (argv[0] the binary) in a process group of its own, its stdout and stderr
  /// appended to `log_path`; its pid, or -1.
  virtual pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path) = 0;
  /// Sends `sig` to `pid`.
  virtual void signal(pid_t pid, int sig) = 0;
  /// `pid` runs (a zombie does not).
  virtual bool alive(pid_t pid) = 0;
};

/// fork/exec, kill(2) and /proc.
std::shared_ptr<process_table> os_processes();

}  // namespace dde::activator
