#include "dde/daemon.hpp"

#include <pthread.h>
#include <signal.h>

#include <iostream>

#include "dde/log.hpp"

namespace dde {
namespace {
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

std::optional<int> parse_command_line(cli& args, int argc, char** argv, const char* program) {
  if (auto err = args.parse(argc, argv)) {
    std::cerr << program << ": " << *err << "\nTry '" << program << " --help'.\n";
    return 2;
  }
  if (args.help_requested()) {
    std::cout << args.usage();
    return 0;
  }
  if (args.version_requested()) {
    std::cout << args.version_line() << "\n";
    return 0;
  }
  if (args.has("log-level") && !set_log_level(args.get("log-level"))) {
    std::cerr << program << ": unknown --log-level " << args.get("log-level") << "\n";
    return 2;
  }
  return std::nullopt;
}

void block_stop_signals() {
  auto set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_stop_signal() {
  auto set = stop_signals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace dde
