#include "processes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>

namespace dde::activator {
namespace {

class os_process_table final : public process_table {
 public:
  pid_t spawn(const std::vector<std::string>& args, const std::string& log_path) override {
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    pid_t pid = ::fork();
    if (pid == 0) {
      // Child: only async-signal-safe calls until exec.
      if (log_fd >= 0) {
        ::dup2(log_fd, 1);
        ::dup2(log_fd, 2);
      }
      ::syscall(SYS_close_range, 3u, ~0u, 0u);  // the activator's sockets stay with the activator
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setpgid(0, 0);  // the activator decides when its systems stop, not the terminal
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (log_fd >= 0) ::close(log_fd);
    return pid < 0 ? -1 : pid;
  }

  void signal(pid_t pid, int sig) override {
    if (pid > 0) ::kill(pid, sig);
  }

  bool alive(pid_t pid) override {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return false;
    // "pid (comm) S ...": the state follows the last ')'.
    auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
  }
};

}  // namespace

std::shared_ptr<process_table> os_processes() { return std::make_shared<os_process_table>(); }

}  // namespace dde::activator
