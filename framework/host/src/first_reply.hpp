#pragma once
// Scatter-gather and tail-chopping (Akka's "first completed" routers): several workers may hold
// copies of one message, the first reply to it goes out, later ones are dropped and counted. A race
// is opened when a message is handed to its first workers; tail-chopping hands a copy to one more
// worker each time its delay passes without a reply (or a copy fails). The broker message is acked
// once: when a copy that answered it is done, or when every copy ended. Runs on the router's strand
// with the router's clock, except claim(), which worker strands call.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "clock.hpp"
#include "dde/message.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "reply_race.hpp"

namespace dde::host {

/// What a race needs of the pool (the router implements it).
class race_pool {
 public:
  virtual ~race_pool() = default;
  virtual std::size_t slot_count() const = 0;
  /// A worker with room that holds no copy yet (none of `asked`), or pool_ledger::npos.
  virtual std::size_t other_worker(const std::vector<std::size_t>& asked) = 0;
  /// Hands `copy` of delivery `delivery_id` to worker `index`, which the delivery now waits for too.
  virtual void hand_copy(std::uint64_t delivery_id, std::size_t index, message copy) = 0;
  /// The message of delivery `delivery_id` was answered and one copy is done: acked now.
  virtual void ack_answered(std::uint64_t delivery_id) = 0;
  virtual bool stopping() const = 0;
};

class first_reply {
 public:
  first_reply(host::clock& clock, const strand_type& strand, const pool_spec& spec, race_pool& pool);

  /// From a worker's strand, right before it replies to `message_id`: false when another copy
  /// answered first (the reply is dropped). True for a pool that does not race.
  bool claim(const std::string& message_id);
  /// Delivery `delivery_id` of `msg` was handed to `workers`: raced when the pool's router races and
  /// the message has an id.
  void open(std::uint64_t delivery_id, const message& msg, const std::vector<std::size_t>& workers);
  bool raced(std::uint64_t delivery_id) const { return !races_.empty() && races_.count(delivery_id) > 0; }
  /// A copy of raced delivery `delivery_id` ended on its worker.
  void copy_ended(std::uint64_t delivery_id, bool failed);
  struct outcome {
    bool failed = false;  ///< no copy succeeded
    bool acked = false;   ///< ack_answered() acked it already
  };
  /// Its last copy ended: the race closes.
  outcome close(std::uint64_t delivery_id);
  reply_race::counts counts() const { return race_.snapshot(); }

 private:
  struct race {
    std::string message_id;
    std::shared_ptr<const message> copy;  ///< tail-chopping: what the next worker gets
    std::vector<std::size_t> asked;       ///< workers given a copy so far
    std::size_t succeeded = 0;            ///< copies done without failing
    bool acked = false;                   ///< acked once answered; later copies change nothing
    std::unique_ptr<timer> chop_timer;
  };
  void chop(std::uint64_t delivery_id);
  void arm_chop(std::uint64_t delivery_id, race& r);

  host::clock& clock_;
  strand_type strand_;
  const pool_spec& spec_;
  race_pool& pool_;
  reply_race race_;
  std::unordered_map<std::uint64_t, race> races_;  ///< by delivery id
};

}  // namespace dde::host
