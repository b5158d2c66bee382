#include "dde/core/daemon.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

std::optional<std::string> check_scheduling(const std::string& policy) {
  if (policy == "batch" || policy == "normal") return std::nullopt;
  return "unknown scheduling \"" + policy + "\" (batch or normal)";
}

void name_this_thread(const std::string& name) {
  ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

std::optional<std::string> apply_scheduling(const std::string& policy) {
  if (auto err = check_scheduling(policy)) return err;
  sched_param param{};  // priority 0, the only one SCHED_BATCH and SCHED_OTHER take
  // pid 0: the calling thread (a Linux thread's policy is its own; new threads inherit it).
  if (::sched_setscheduler(0, policy == "batch" ? SCHED_BATCH : SCHED_OTHER, &param) != 0)
    return std::string("cannot set scheduling ") + policy + ": " + std::strerror(errno);
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

bool notify_systemd(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::size_t length = std::strlen(path);
  if (length >= sizeof addr.sun_path || (path[0] != '/' && path[0] != '@')) return false;
  std::memcpy(addr.sun_path, path, length);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // an abstract socket
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  auto size = socklen_t(offsetof(sockaddr_un, sun_path) + length);
  bool sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr),
                       size) == ssize_t(state.size());
  ::close(fd);
  return sent;
}

}  // namespace dde
