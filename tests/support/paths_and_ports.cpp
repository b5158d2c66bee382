// wait_until, free_port, fresh_dir, bin_path, worker_path, port_open.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
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

std::uint16_t free_port() {
  tcp_socket sock;
  auto addr = loopback(0);
  if (::bind(sock.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::system_error(errno, std::generic_category(), "bind 127.0.0.1:0");
  socklen_t len = sizeof addr;
  if (::getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::system_error(errno, std::generic_category(), "getsockname");
  return ntohs(addr.sin_port);
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
