#pragma once
// A small WebSocket client of dde-mqs for tests and the MQS benchmark: it connects, sends record
// batches, and collects what comes back on a background thread. Await with `wait_for`.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dde/wire/record.hpp"

namespace dde::mqs::test {

using namespace std::chrono_literals;

class mqs_client {
 public:
  /// Connects to ws://127.0.0.1:port/mqs; throws std::runtime_error on failure.
  explicit mqs_client(std::uint16_t port, std::size_t max_message = 64 * 1024 * 1024);
  ~mqs_client();
  mqs_client(const mqs_client&) = delete;
  mqs_client& operator=(const mqs_client&) = delete;

  /// Sends a binary message (a record batch, or anything) / a text message.
  void send(std::string data);
  void send_text(std::string text);
  /// Sends one record.
  void send_record(const nlohmann::json& header, std::string_view body = {});

  /// hello, then waits for the welcome; false if none came. `binary_deliver`: asks for binary
  /// `deliver` headers; the client reads each as its JSON header would be, plus `"binary": true`.
  bool hello(const std::string& system = "test", std::chrono::milliseconds timeout = 10s,
             bool binary_deliver = false);
  void enqueue(const std::string& topic, const std::string& mode, std::optional<std::uint64_t> seq,
               std::string_view body);
  /// `consumers`: the host's workers on the topic (0: not said).
  void pull(const std::string& topic, const std::string& mode, std::uint32_t credit,
            std::uint32_t consumers = 0);
  void ack(const std::vector<std::uint64_t>& tags);
  void nack(const std::vector<std::uint64_t>& tags, bool requeue);

  /// Called on the client's thread for each record received, before it is stored; the record
  /// is not stored when it returns false (benchmarks keep memory flat that way).
  void on_record(std::function<bool(const wire::record&)> hook);

  /// Called on the client's thread with the records of each WebSocket message received; the
  /// records it leaves in the vector are stored (after `on_record`). Benchmarks ack per batch.
  void on_batch(std::function<void(std::vector<wire::record>&)> hook);

  /// Waits until `condition` (called under the client's lock) holds; its last value.
  bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

  // Snapshots, thread-safe.
  std::vector<wire::record> records();
  std::vector<wire::record> records(const std::string& action);
  std::size_t count(const std::string& action);
  std::vector<std::string> texts();
  /// Every seq in the confirm records received so far.
  std::vector<std::uint64_t> confirmed_seqs();
  std::vector<std::uint64_t> rejected_seqs();
  bool closed();
  /// The close code the server sent (0 if none).
  int close_code();

  /// Closes the WebSocket politely / drops the TCP connection at once.
  void close();
  void drop();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace dde::mqs::test
