#pragma once
// A dispatcher_port that records what the dispatcher asks of the broker and the hosts.

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher.hpp"

namespace dde::mqs::testing {

struct delivered {
  client_id client;
  std::string topic;
  std::uint64_t tag;
  bool redelivered;
  std::string body;
};

/// Records what the dispatcher asks of the broker and the hosts.
class fake_port : public dispatcher_port {
 public:
  std::string start_consumer(const std::string& topic, delivery_mode, std::uint32_t partitions) override {
    started.push_back(topic);
    started_partitions.push_back(partitions);
    return refuse_start;
  }
  void stop_consumer(const std::string& topic) override { stopped.push_back(topic); }
  void ack(const broker_ref& ref) override { acked.push_back(ref); }
  void release(const broker_ref& ref) override { released.push_back(ref); }
  void publish_lease(const std::string& topic, std::uint64_t id, const std::string& body,
                     const message_props&) override {
    leases.push_back({topic, id, body});
  }
  void dead_letter_copy(const std::string& topic, const std::string& body, const message_props&,
                        const broker_ref& ref) override {
    dead_copies.push_back({topic, body, ref});
  }
  void reject(const broker_ref& ref, bool requeue) override { (requeue ? requeued : dropped).push_back(ref); }
  void deliver(client_id client, const std::string& topic, std::uint64_t tag, bool redelivered,
               const std::string& body, const message_props&) override {
    deliveries.push_back({client, topic, tag, redelivered, body});
  }
  bool can_deliver(client_id client) override { return !full.count(client); }
  void set_consumers(const std::string& topic, std::uint32_t n) override { consumers.emplace_back(topic, n); }
  void returned(const std::string& topic) override { returns.push_back(topic); }

  std::vector<std::string> started, stopped;
  std::vector<std::uint32_t> started_partitions;
  std::vector<broker_ref> acked, requeued, dropped;
  std::vector<broker_ref> released;  ///< acked for a lease, not for a host
  struct lease_copy {
    std::string topic;
    std::uint64_t id;
    std::string body;
  };
  std::vector<lease_copy> leases;  ///< publish_lease calls
  struct dead_copy {
    std::string topic, body;
    broker_ref ref;
  };
  std::vector<dead_copy> dead_copies;
  std::vector<delivered> deliveries;
  std::string refuse_start;
  std::set<client_id> full;                                      ///< hosts whose send queue is full
  std::vector<std::pair<std::string, std::uint32_t>> consumers;  ///< set_consumers calls
  std::vector<std::string> returns;                              ///< returned calls: a topic each
};

/// A dispatcher over a fake_port, and the clock and modes its tests use.
class dispatcher_fixture : public ::testing::Test {
 protected:
  using clock_type = dispatcher::clock;
  fake_port port;
  dispatcher d{port, std::chrono::milliseconds(10000)};
  clock_type::time_point t0 = clock_type::now();
  static constexpr auto alo = delivery_mode::at_least_once;
  static constexpr auto amo = delivery_mode::at_most_once;
};

inline broker_ref ref(std::uint64_t tag, std::uint16_t channel = 1, std::uint64_t epoch = 1) {
  return {epoch, channel, tag};
}

}  // namespace dde::mqs::testing
