// The spawner thread and the fork/exec itself.
#include "spawner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace dde::test::detail {
namespace {

/// Runs tasks on one thread that lives until the process exits.
class spawner_thread {
 public:
  static spawner_thread& instance() {
    // Leaked on purpose: the thread must outlive static destructors (a static broker stops
    // itself at exit by running rabbitmqctl, which is spawned here).
    static auto* const thread = new spawner_thread();
    return *thread;
  }

  int run(std::function<int()> task) {
    std::packaged_task<int()> packaged(std::move(task));
    auto result = packaged.get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(packaged));
    }
    ready_.notify_one();
    return result.get();
  }

 private:
  spawner_thread() {
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    while (true) {
      std::packaged_task<int()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<int()>> tasks_;
};

/// A file descriptor closed on scope exit.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string item(*entry);
    const auto name = item.substr(0, item.find('='));
    if (!extra.contains(name)) env.push_back(std::move(item));
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

[[noreturn]] void child_fail(int report_fd) {
  const int error = errno;
  [[maybe_unused]] auto written = ::write(report_fd, &error, sizeof error);
  ::_exit(127);
}

int fork_and_exec(std::vector<std::string> argv, const std::filesystem::path& log_file,
                  const std::map<std::string, std::string>& extra_env) {
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  auto env = merged_environment(extra_env);
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(env);
  fd_guard log{::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (log.fd < 0) throw std::system_error(errno, std::generic_category(), "open " + log_file.string());
  fd_guard null_in{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  int report[2];  // the child writes errno here if exec fails; closed by a successful exec
  if (::pipe2(report, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  fd_guard report_read{report[0]}, report_write{report[1]};
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(report[1]);
    if (::getppid() != parent) ::_exit(126);  // the test process died before prctl
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(null_in.fd, 0) < 0 || ::dup2(log.fd, 1) < 0 || ::dup2(log.fd, 2) < 0) child_fail(report[1]);
    ::execvpe(c_argv[0], c_argv.data(), c_env.data());
    child_fail(report[1]);
  }

  ::close(report_write.fd);
  report_write.fd = -1;
  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(report_read.fd, &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  if (got > 0) {
    ::waitpid(pid, nullptr, 0);
    throw std::system_error(child_errno, std::generic_category(), "exec " + argv.front());
  }
  return pid;
}

}  // namespace

int spawn(const std::vector<std::string>& argv, const std::filesystem::path& log_file,
          const std::map<std::string, std::string>& extra_env) {
  if (argv.empty()) throw std::invalid_argument("spawn: empty argv");
  return spawner_thread::instance().run([&] { return fork_and_exec(argv, log_file, extra_env); });
}

}  // namespace dde::test::detail
