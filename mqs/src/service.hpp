#pragma once
// The WebSocket side of the MQS: one session per host connection. It validates each record and
// routes it: enqueues to the enqueuer, pulls/acks/nacks/cancels to the dequeuer thread; bad
// records get an `error` record (and `reject` for an enqueue with a seq) and the stream goes on.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "dde/core/net/ops_endpoints.hpp"
#include "dde/log.hpp"
#include "dde/mqs/config.hpp"
#include "dde/net/ws.hpp"
#include "dequeuer.hpp"
#include "enqueuer.hpp"
#include "flow_control.hpp"
#include "partitions.hpp"

namespace dde::mqs {

class service : public net::ws_handler {
 public:
  explicit service(const config& cfg);
  ~service() override;
  /// Starts the enqueuer and the dequeuer: their loops on `io` (nullptr, --enqueuer-thread,
  /// --dequeuer-thread, --broker-tls for the enqueuer: on threads of their own).
  void start(boost::asio::io_context* io = nullptr);
  /// Stops them (joins: call from outside the Asio threads).
  void stop();

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override;
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override;
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override;

  /// Open host connections.
  std::size_t clients();
  /// Ready while the publishing connection to the broker is up (thread-safe).
  net::readiness readiness() const;

 private:
  struct session {
    bool hello = false;
    bool binary_deliver = false;  ///< its hello asked for binary `deliver` headers
    std::string system;
    std::string instance;
  };
  std::shared_ptr<session> find(std::uint64_t id);
  /// The "mqs" logger (looked up once).
  static spdlog::logger& log();
  /// One binary message of a host (service_batch.cpp).
  struct batch;

  config cfg_;
  std::string id_;  ///< this MQS process, sent in `welcome`
  flow_control flow_;
  enqueuer enqueuer_;
  dequeuer dequeuer_;
  partition_directory partitions_;  ///< the partitioned topics, as their pools' pulls said
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<session>> sessions_;
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace dde::mqs
