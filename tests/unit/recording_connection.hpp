#pragma once
// A WebSocket connection that records what is sent on it: the MQS's side of a host (the MQS cores'
// tests) or the host's side of an MQS (the top level's tests). `take` decodes what was sent.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dde/net/ws.hpp"
#include "dde/wire/record.hpp"

namespace dde::testing {

class recording_connection final : public net::ws_connection {
 public:
  explicit recording_connection(std::uint64_t id) : id_(id) {}
  void send(std::string data, bool) override { sent.push_back(std::move(data)); }
  void close(std::string reason) override { closed = std::move(reason); }
  void pause_reading(bool) override {}
  std::size_t queued_bytes() const override { return 0; }
  const std::string& remote() const override { return remote_; }
  std::uint64_t id() const override { return id_; }

  /// The records sent since the last call, in order, decoded from their batches.
  std::vector<wire::record> take() {
    std::vector<wire::record> out;
    for (auto& batch : sent) {
      auto decoded = wire::decode_batch(batch, std::size_t(1) << 24);
      EXPECT_TRUE(decoded.error.empty()) << decoded.error;
      for (auto& r : decoded.records) out.push_back(std::move(r));
    }
    sent.clear();
    return out;
  }

  std::vector<std::string> sent;  ///< each send's bytes
  std::string closed;             ///< the reason of close(), once called

 private:
  std::uint64_t id_;
  std::string remote_ = "127.0.0.1:1";
};

}  // namespace dde::testing
