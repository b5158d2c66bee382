#include "own_messages.hpp"

#include <charconv>

#include "dde/names.hpp"

namespace dde::mqs {
namespace {

/// The header of a lease copy naming the delivery it stands for.
constexpr std::string_view lease_header = "x-dde-lease";

}  // namespace

void own_messages::add_lease_copy(std::string lease_queue, std::uint64_t id, const std::string& body,
                                  const message_props& props, settled_fn settled) {
  // Without an x-dde-lease before: dropped as the delivery arrived (drop_lease_header).
  add(std::move(lease_queue), body, props, std::move(settled))
      .props.headers.emplace_back(std::string(lease_header), std::to_string(id));
}

void own_messages::add_dead_letter(const std::string& topic, const std::string& body,
                                   const message_props& props, settled_fn settled) {
  add(dead_letter_topic(topic), body, props, std::move(settled));
}

outgoing_message& own_messages::add(std::string topic, const std::string& body, const message_props& props,
                                    settled_fn settled) {
  outgoing_message& m = queued_.emplace_back();
  m.topic = std::move(topic);
  m.mode = delivery_mode::at_least_once;
  m.body = body;
  m.props = props;
  m.settled = std::move(settled);
  return m;
}

void own_messages::flush() {
  if (queued_.empty()) return;
  auto out = std::move(queued_);
  queued_.clear();
  if (publish_) return publish_(std::move(out));
  for (auto& m : out) m.settled(false);
}

std::optional<std::uint64_t> own_messages::lease_id_of(const message_props& props) {
  for (auto& [key, value] : props.headers) {
    if (key != lease_header) continue;
    std::uint64_t id = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
    if (ec == std::errc() && end == value.data() + value.size() && id != 0) return id;
  }
  return std::nullopt;
}

void own_messages::drop_lease_header(message_props& props) {
  // A message that came back to the pool's queue from another MQS's lease queue (that MQS died)
  // still carries that MQS's number. It is the MQS's own mark: a host never sees it, and a lease
  // copy of this delivery names this MQS's delivery alone.
  std::erase_if(props.headers, [](const auto& h) { return h.first == lease_header; });
}

}  // namespace dde::mqs
