#include "tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <system_error>
#include <vector>

#include "dde_test.hpp"
#include "loopback.hpp"

namespace dde::test {
namespace {

using detail::loopback;

void reset(int fd) {
  linger l{1, 0};  // close sends RST, not FIN: the peer sees the connection die
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

/// Writes all of `data` (blocking the proxy briefly: loopback peers drain fast).
bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    auto w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= std::size_t(w);
  }
  return true;
}

struct pair_fds {
  int client = -1;
  int target = -1;
};

}  // namespace

tcp_proxy::tcp_proxy(std::uint16_t target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = loopback(0);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0)
    throw std::system_error(errno, std::generic_category(), "tcp_proxy bind/listen");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::thread([this] { run(); });
}

tcp_proxy::~tcp_proxy() {
  stop_ = true;
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void tcp_proxy::sever() {
  sever_done_ = false;
  sever_requested_ = true;
  wait_until([this] { return sever_done_.load(); }, std::chrono::seconds(10), std::chrono::milliseconds(5));
}

void tcp_proxy::run() {
  std::vector<pair_fds> pairs;
  auto sever_deadline = std::chrono::steady_clock::time_point::max();
  auto cut_all = [&] {
    for (auto& p : pairs) {
      reset(p.client);
      reset(p.target);
      ++severed_;
    }
    pairs.clear();
    sever_requested_ = false;
    sever_deadline = std::chrono::steady_clock::time_point::max();
    sever_done_ = true;
  };
  std::vector<char> buf(64 * 1024);
  while (!stop_) {
    if (sever_requested_ && sever_deadline == std::chrono::steady_clock::time_point::max())
      sever_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    if (sever_requested_ && (pairs.empty() || std::chrono::steady_clock::now() >= sever_deadline)) cut_all();

    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    for (auto& p : pairs) {
      fds.push_back({p.client, POLLIN, 0});
      fds.push_back({p.target, short(stalled_ ? 0 : POLLIN), 0});
    }
    ::poll(fds.data(), fds.size(), 20);
    const std::size_t polled = pairs.size();
    if (fds[0].revents & POLLIN) {
      int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        int t = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        auto addr = loopback(target_port_);
        if (::connect(t, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          pairs.push_back({c, t});
          ++accepted_;
        } else {
          ::close(t);
          reset(c);
        }
      }
    }
    std::vector<bool> dead(pairs.size(), false);
    bool cut = false;
    for (std::size_t i = 0; i < polled && !cut; ++i) {
      auto& p = pairs[i];
      for (int side = 0; side < 2 && !dead[i]; ++side) {
        auto& f = fds[2 + 2 * i + std::size_t(side)];
        if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        int from = side == 0 ? p.client : p.target, to = side == 0 ? p.target : p.client;
        auto n = ::recv(from, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) {
          dead[i] = true;
          break;
        }
        if (sever_requested_ && n > 1) {
          write_all(to, buf.data(), std::size_t(n) / 2);  // half a chunk, then the cut
          ++cut_mid_chunk_;
          cut = true;
          break;
        }
        if (!write_all(to, buf.data(), std::size_t(n))) dead[i] = true;
      }
    }
    if (cut) {
      cut_all();
      continue;
    }
    for (std::size_t i = pairs.size(); i-- > 0;)
      if (dead[i]) {
        reset(pairs[i].client);
        reset(pairs[i].target);
        pairs.erase(pairs.begin() + long(i));
      }
  }
  for (auto& p : pairs) {
    reset(p.client);
    reset(p.target);
  }
}

}  // namespace dde::test
