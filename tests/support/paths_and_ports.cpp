// wait_until, free_port, fresh_dir, bin_path, worker_path, port_open.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "dde_test.hpp"
#include "loopback.hpp"

namespace dde::test {
namespace {

/// An IPv4 TCP socket closed on scope exit.
class tcp_socket {
 public:
  tcp_socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "socket");
  }
  ~tcp_socket() { ::close(fd_); }
  tcp_socket(const tcp_socket&) = delete;
  tcp_socket& operator=(const tcp_socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

using detail::loopback;

}  // namespace

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(poll);
  }
}

namespace {

/// True when nothing holds 127.0.0.1:port, not even a connection in TIME_WAIT (no SO_REUSEADDR).
bool bindable(std::uint16_t port) {
  tcp_socket sock;
  auto addr = loopback(port);
  return ::bind(sock.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

/// The kernel's own pick (port 0): the last resort, since it comes from the ephemeral range.
std::uint16_t kernel_port() {
  tcp_socket sock;
  auto addr = loopback(0);
  if (::bind(sock.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::system_error(errno, std::generic_category(), "bind 127.0.0.1:0");
  socklen_t len = sizeof addr;
  if (::getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::system_error(errno, std::generic_category(), "getsockname");
  return ntohs(addr.sin_port);
}

}  // namespace

std::pair<std::uint16_t, std::uint16_t> listen_port_range() {
  // The ephemeral range is where every outgoing connection (of any test running beside) takes its
  // source port, and where bind(port 0) picks from: a port found free there can be taken by a
  // connect() before the daemon it was meant for binds it. Below it, only listeners compete.
  static const auto range = []() -> std::pair<std::uint16_t, std::uint16_t> {
    unsigned first = 32768, last = 60999;
    if (std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range"); in) in >> first >> last;
    constexpr unsigned lowest = 15000, enough = 2000;
    if (first > lowest + enough) return {lowest, static_cast<std::uint16_t>(first - 1)};
    if (last + enough < 65535) return {static_cast<std::uint16_t>(last + 1), 65535};
    return {0, 0};
  }();
  return range;
}

bool claim_port(std::uint16_t port) {
  static const auto dir = [] {
    auto d = std::filesystem::path(DDE_TEST_TMP) / "ports";
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    return d;
  }();
  const auto file = (dir / std::to_string(port)).string();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644); fd >= 0) {
      const auto pid = std::to_string(::getpid());
      const bool written = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
      ::close(fd);
      return written;
    }
    if (errno != EEXIST) return true;
    long owner = 0;
    std::ifstream in(file);
    if (!(in >> owner) || owner <= 0) return false;  // being written by its claimer this very moment
    if (::kill(static_cast<pid_t>(owner), 0) == 0 || errno == EPERM) return false;  // its claimer lives
    ::unlink(file.c_str());                                                         // its claimer is gone
  }
  return false;
}

std::uint16_t free_port() {
  static std::mutex mutex;
  // Never the same port twice in one test process: claim_port refuses a port this process claimed,
  // but the kernel's pick (the last resort) and a claim folder that cannot be written are not claims.
  static std::set<std::uint16_t> given;
  static std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  const auto [low, high] = listen_port_range();
  std::lock_guard lock(mutex);
  if (low != 0) {
    std::uniform_int_distribution<unsigned> pick(low, high);
    for (int attempt = 0; attempt < 500; ++attempt) {
      const auto port = static_cast<std::uint16_t>(pick(random));
      if (!given.contains(port) && bindable(port) && claim_port(port)) {
        given.insert(port);
        return port;
      }
    }
  }
  const auto port = kernel_port();
  given.insert(port);
  return port;
}

std::filesystem::path fresh_dir(const std::string& name) {
  // A counter keeps two calls with the same name in one process apart.
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::path(DDE_TEST_TMP) /
                   (name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path bin_path(const std::string& name) { return std::filesystem::path(DDE_BIN_DIR) / name; }

std::filesystem::path worker_path(const std::string& name) {
  return std::filesystem::path(DDE_WORKER_DIR) / ("lib" + name + ".so");
}

bool port_open(std::uint16_t port) {
  tcp_socket sock;
  auto addr = loopback(port);
  return ::connect(sock.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace dde::test
