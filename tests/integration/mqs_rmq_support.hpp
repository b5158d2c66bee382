#pragma once
// What the dde-mqs tests against a real broker share (mqs_rmqtest and its sibling files).

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "dde/net/http_client.hpp"
#include "dde_test.hpp"
#include "mqs_client.hpp"
#include "mqs_process.hpp"

namespace dde::mqs::test {

using dde::test::rabbitmq_node;
using dde::test::shared_broker;
using dde::test::wait_until;

inline std::vector<std::uint64_t> tags_of(const std::vector<wire::record>& deliveries) {
  std::vector<std::uint64_t> out;
  for (auto& d : deliveries) out.push_back(d.header.at("tag").get<std::uint64_t>());
  return out;
}

inline std::set<std::string> bodies_of(const std::vector<wire::record>& deliveries) {
  std::set<std::string> out;
  for (auto& d : deliveries) out.insert(d.body);
  return out;
}

/// Enqueues "m1".."mn" to `topic` at-least-once and waits until the broker confirmed them all.
inline bool enqueue_confirmed(mqs_client& c, const std::string& topic, int n) {
  for (int i = 1; i <= n; ++i) c.enqueue(topic, "at-least-once", i, "m" + std::to_string(i));
  return c.wait_for([&] { return c.confirmed_seqs().size() >= std::size_t(n); }, 20s);
}

/// Stops the MQS (its consumers close: what they held unacked goes back to the queue), expects
/// `ready` messages left in `topic`'s queue, and deletes it.
inline void stop_and_expect_ready(mqs_process& mqs, rabbitmq_node& broker, const std::string& topic,
                                  std::uint32_t ready) {
  EXPECT_EQ(mqs.stop(), 0);
  // The broker returns what a closed channel held asynchronously (a quorum queue's consumer goes
  // through its Raft log): the count is right once it did, not at the moment the MQS exited.
  wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(ready); }, 20s);
  EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(ready));
  delete_topic(broker, topic);
}

/// The broker consumers the MQS says it holds on `topic` (GET /topics "consumers"), -1 if unknown.
inline int mqs_consumers(mqs_process& mqs, const std::string& topic) {
  auto r =
      net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(mqs.port()) + "/topics?names=" + topic);
  if (r.status != 200) return -1;
  return nlohmann::json::parse(r.body).at("topics").at(topic).value("consumers", -1);
}

/// Acks every delivery as it arrives.
inline void auto_ack(mqs_client& c) {
  c.on_record([&c](const wire::record& r) {
    if (r.header.value("action", "") == "deliver") c.ack({r.header.at("tag").get<std::uint64_t>()});
    return true;
  });
}

}  // namespace dde::mqs::test
