#pragma once
// The messages the dequeuer's loop publishes itself: lease copies (mqs/PROTOCOL.md "Leases"), each
// naming the delivery it stands for in its x-dde-lease header, and dead-lettered copies. Gathered
// during a turn and handed to the enqueuer at its end, counted in the enqueuer's flow like a host's;
// each one's `settled` runs on the enqueuer's thread once the broker confirmed or refused it.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "enqueuer.hpp"

namespace dde::mqs {

class own_messages {
 public:
  using publisher = std::function<void(std::vector<outgoing_message>&&)>;
  using settled_fn = std::function<void(bool confirmed)>;

  void set_publisher(publisher publish) { publish_ = std::move(publish); }
  /// A copy of delivery `id` (`body`, `props`) for the lease queue `lease_queue`.
  void add_lease_copy(std::string lease_queue, std::uint64_t id, const std::string& body,
                      const message_props& props, settled_fn settled);
  /// A copy of a delivery of `topic` for dde.dead.<topic>.
  void add_dead_letter(const std::string& topic, const std::string& body, const message_props& props,
                       settled_fn settled);
  /// Hands what was added since the last flush to the publisher; without one (a test without an
  /// enqueuer) each is refused (its `settled(false)`).
  void flush();

  /// The delivery a lease copy stands for; nothing for a message that names none.
  static std::optional<std::uint64_t> lease_id_of(const message_props& props);
  /// Drops the x-dde-lease header from a delivery of a pool's queue.
  static void drop_lease_header(message_props& props);

 private:
  /// Queues an at-least-once message of the MQS's own.
  outgoing_message& add(std::string topic, const std::string& body, const message_props& props,
                        settled_fn settled);

  publisher publish_;
  std::vector<outgoing_message> queued_;
};

}  // namespace dde::mqs
