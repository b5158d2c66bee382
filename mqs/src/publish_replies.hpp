#pragma once
// What goes back of the publishes the broker settled: to each host, its confirms (by seq) and rejects
// in one WebSocket message a turn; for the MQS's own messages, their `settled` callbacks.

#include <string>
#include <utility>
#include <vector>

#include "flow_control.hpp"
#include "mqs_metrics.hpp"
#include "outgoing_message.hpp"

namespace dde::mqs {

class publish_replies {
 public:
  /// Where the broker's confirms put the messages they settle (confirm_tracker::settle).
  std::vector<outgoing_message>& confirmed() { return confirmed_; }
  /// An at-least-once message the MQS could not publish, and why.
  void refused(outgoing_message&& m, std::string error) {
    refused_.emplace_back(std::move(m), std::move(error));
  }
  /// Sends what was settled since the last send; each confirmed message leaves `flow` and counts as
  /// published in `counted`.
  void send(flow_control& flow, topic_counter_cache& counted);

 private:
  std::vector<outgoing_message> confirmed_;
  std::vector<std::pair<outgoing_message, std::string>> refused_;
};

}  // namespace dde::mqs
