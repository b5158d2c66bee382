// child_process: a process started for a test, with its output in a log file.
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "dde_test.hpp"
#include "spawner.hpp"

namespace dde::test {

child_process::child_process(std::vector<std::string> argv, std::filesystem::path log_file,
                             std::map<std::string, std::string> extra_env)
    : log_file_(std::move(log_file)) {
  if (log_file_.has_parent_path()) std::filesystem::create_directories(log_file_.parent_path());
  pid_ = detail::spawn(argv, log_file_, extra_env);
}

child_process::~child_process() {
  if (running()) kill9();
}

bool child_process::running() {
  if (status_ || pid_ < 0) return false;
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == pid_) {
    status_ = status;
    // Helpers the child left in its process group go with it.
    ::kill(-pid_, SIGKILL);
    return false;
  }
  return got == 0;
}

void child_process::signal(int signal) {
  if (running()) ::kill(pid_, signal);
}

int child_process::stop(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  if (!wait_exit(grace)) kill9();
  return status_.value_or(-1);
}

void child_process::kill9() {
  if (status_ || pid_ < 0) return;
  // The whole process group: a wrapper script's children die too.
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  status_ = got == pid_ ? status : -1;
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds timeout) {
  wait_until([this] { return !running(); }, timeout, 10ms);
  return status_;
}

std::string child_process::log() const {
  std::ifstream in(log_file_, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

tool_result run_tool(const std::string& tool, const std::vector<std::string>& args,
                     const std::string& stdin_file) {
  auto dir = fresh_dir(tool);
  // sh keeps stderr apart from stdout (child_process sends both to its log file).
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" <\"$STDIN_FILE\" 2>\"$ERR_FILE\"",
                                   bin_path(tool).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process proc(argv, dir / "out.txt",
                     {{"STDIN_FILE", stdin_file}, {"ERR_FILE", (dir / "err.txt").string()}});
  auto status = proc.wait_exit(30s);
  tool_result r;
  if (status && WIFEXITED(*status)) r.exit = WEXITSTATUS(*status);
  r.out = proc.log();
  std::ifstream err(dir / "err.txt");
  r.err.assign(std::istreambuf_iterator<char>(err), {});
  return r;
}

}  // namespace dde::test
