#include "publish_queues.hpp"

#include <algorithm>
#include <iterator>

namespace dde::mqs {

void publish_queues::add(outgoing_message&& m) {
  if (m.mode == delivery_mode::at_least_once)
    confirmed_.push_back(std::move(m));
  else
    transient_.push_back(std::move(m));
}

outgoing_message publish_queues::take_front(delivery_mode mode) {
  auto& queue = mode == delivery_mode::at_least_once ? confirmed_ : transient_;
  auto m = std::move(queue.front());
  queue.pop_front();
  return m;
}

void publish_queues::put_back(std::vector<outgoing_message>&& again) {
  for (auto it = again.rbegin(); it != again.rend(); ++it) confirmed_.push_front(std::move(*it));
}

void publish_queues::retry_at(std::vector<outgoing_message>&& nacked, clock::time_point at) {
  for (auto& m : nacked) retry_.emplace_back(at, std::move(m));
}

void publish_queues::take_due_retries(clock::time_point now) {
  auto due = std::find_if(retry_.begin(), retry_.end(), [&](const auto& r) { return r.first > now; });
  for (auto it = std::make_reverse_iterator(due); it != retry_.rend(); ++it)
    confirmed_.push_front(std::move(it->second));
  retry_.erase(retry_.begin(), due);
}

std::optional<publish_queues::clock::time_point> publish_queues::next_retry() const {
  if (retry_.empty()) return std::nullopt;
  return retry_.front().first;
}

}  // namespace dde::mqs
