#pragma once
// A TCP proxy on 127.0.0.1 for fault tests: it forwards each accepted connection to a target
// port and can cut every connection in the middle of the data (RST), or stop reading from the
// target (a peer that does not read its socket).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace dde::test {

class tcp_proxy {
 public:
  /// Listens on a free port and forwards to 127.0.0.1:`target_port`.
  explicit tcp_proxy(std::uint16_t target_port);
  ~tcp_proxy();
  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  std::uint16_t port() const { return port_; }
  std::string ws_url(const std::string& path = "/mqs") const {
    return "ws://127.0.0.1:" + std::to_string(port_) + path;
  }
  /// Cuts every open connection: forwards half of the next chunk that passes (so a WebSocket
  /// frame is cut in two) and resets both sides. Returns once done (at most 2 s, then it cuts
  /// without waiting for data). New connections are accepted afterwards.
  void sever();
  /// Stops (true) or resumes (false) reading from the target: what the target sends piles up in
  /// its own socket buffers and send queues.
  void stall(bool stalled) { stalled_ = stalled; }
  /// Connections cut by sever() so far, and how many of them in the middle of a chunk.
  std::size_t severed() const { return severed_; }
  std::size_t cut_mid_chunk() const { return cut_mid_chunk_; }
  /// Connections accepted so far.
  std::size_t accepted() const { return accepted_; }

 private:
  void run();

  std::uint16_t target_port_;
  std::uint16_t port_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stalled_{false};
  std::atomic<bool> sever_requested_{false};
  std::atomic<bool> sever_done_{false};
  std::atomic<std::size_t> severed_{0}, cut_mid_chunk_{0}, accepted_{0};
  std::thread thread_;
};

}  // namespace dde::test
