#include "queue_admin.hpp"

#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"

namespace dde::mqs {
namespace {

// A declared queue is declared again after this long: a reply queue that expired, or a queue
// someone deleted, comes back.
constexpr auto redeclare_after = std::chrono::seconds(30);

}  // namespace

queue_admin::outcome queue_admin::ensure(amqp_session& session, const outgoing_message& msg,
                                         clock::time_point now, std::string& error) {
  auto queue = msg.partition ? partition_spec(msg.topic, *msg.partition, msg.mode, quorum_)
                             : spec_for(msg.topic, msg.mode, quorum_);
  if (auto it = until_.find(queue.name); it != until_.end() && now < it->second) return outcome::declared;
  std::vector<queue_spec> specs;
  if (auto dl = dead_letter_spec_for(msg.topic, msg.mode, quorum_)) specs.push_back(*dl);
  specs.push_back(std::move(queue));
  for (auto& spec : specs) {
    bool existing = false;
    auto r = session.declare_or_use(channel_, spec, existing);
    if (r.connection_lost()) {
      error = r.error;
      return outcome::connection_lost;
    }
    if (!r.ok()) {
      // Refused for another reason (access, a queue being deleted...): reopen the channel for the next.
      if (auto o = session.open_channel(channel_); o.connection_lost()) {
        error = o.error;
        return outcome::connection_lost;
      }
      error = "cannot declare queue " + spec.name + ": " + r.error;
      logger("mqs.enqueuer")->error("{}", error);
      return outcome::refused;
    }
    if (existing && warned_.insert(spec.name).second)
      logger("mqs.enqueuer")
          ->warn("queue {} exists with other arguments than the MQS would give it for {}: using it as it is",
                 spec.name, to_string(msg.mode));
  }
  until_[specs.back().name] = now + redeclare_after;
  return outcome::declared;
}

std::optional<std::string> queue_admin::answer_depths(amqp_session* session) {
  std::optional<std::string> lost;
  for (auto& q : depths_.take()) {
    std::uint32_t messages = 0, consumers = 0;
    std::string error = "not connected to the broker";
    if (session) {
      auto r = session->queue_depth(channel_, q.topic, messages, consumers);
      error = r.error;
      if (r.connection_lost()) {
        lost = r.error;
        session = nullptr;
      } else if (r.channel_closed) {
        // E.g. 404, no such queue yet: the channel is reopened for the declares that follow.
        if (auto o = session->open_channel(channel_); o.connection_lost()) {
          lost = o.error;
          session = nullptr;
        }
      }
    }
    std::string out;
    append_depth(out, q.topic, messages, consumers, error);
    q.conn->send(std::move(out), true);
  }
  return lost;
}

}  // namespace dde::mqs
