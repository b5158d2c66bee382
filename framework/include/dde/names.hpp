#pragma once
/// \file
/// Names, addresses and topics. Every name that reaches the broker passes through here.

#include <optional>
#include <string>
#include <string_view>

namespace dde {

/// True for a non-empty name of at most 100 characters from `[A-Za-z0-9_-]`.
bool valid_name(std::string_view name);

/// A worker pool's address, `system/isolate`.
struct address {
  std::string system;
  std::string isolate;
  std::string str() const { return system + "/" + isolate; }
  /// The broker queue of this pool: `system.isolate`.
  std::string topic() const { return system + "." + isolate; }
};

/// Parses `system/isolate`; nullopt when either part is not a valid name.
std::optional<address> parse_address(std::string_view text);

/// True for a queue name DDE may use: 2 to 4 valid names joined by '.'.
bool valid_topic(std::string_view topic);

/// The reply queue of one isolate-system instance.
std::string reply_topic(std::string_view instance_id);

/// The dead-letter queue of a topic.
std::string dead_letter_topic(std::string_view topic);

/// The delay queue of a pool's topic (`system.isolate`) for `delay_ms`: `dde.delay-<ms>.<topic>`. A
/// message put there comes back to `topic` once it waited `delay_ms` (delayed retry, send_after).
std::string delay_topic(std::string_view topic, long long delay_ms);
/// The delay of a delay queue and the topic its messages return to; nullopt for any other name.
struct delay_queue {
  long long delay_ms = 0;
  std::string topic;
};
std::optional<delay_queue> parse_delay_topic(std::string_view name);

/// How a pool's messages are delivered.
enum class delivery_mode { at_least_once, at_most_once, reply };

std::string_view to_string(delivery_mode mode);
std::optional<delivery_mode> parse_delivery_mode(std::string_view text);

/// A new random UUID, lower-case text.
std::string new_uuid();

}  // namespace dde
