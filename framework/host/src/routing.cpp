#include "routing.hpp"

#include <algorithm>

#include "dde/core/stable_hash.hpp"

namespace dde::host {

pool_ledger::pool_ledger(router_kind kind, std::size_t credits_per_worker, std::uint32_t seed)
    : kind_(kind), credits_(std::max<std::size_t>(1, credits_per_worker)), rng_(seed) {}

std::size_t pool_ledger::add_worker(std::string id, std::string path) {
  slots_.push_back({std::move(id), std::move(path), 0, true, true});
  std::size_t index = slots_.size() - 1;
  if (kind_ == router_kind::consistent_hash) {
    for (int v = 0; v < virtual_nodes; ++v)
      ring_.emplace_back(stable_hash("slot-" + std::to_string(index) + "#" + std::to_string(v)), index);
    std::sort(ring_.begin(), ring_.end());
  }
  return index;
}

std::size_t pool_ledger::owner_of(std::string_view key) const {
  if (ring_.empty()) return npos;
  auto h = stable_hash(key);
  auto start = std::lower_bound(ring_.begin(), ring_.end(), std::pair<std::uint64_t, std::size_t>{h, 0});
  // Clockwise from the key's point: the first point of a slot that takes messages (alive, not killed).
  for (std::size_t k = 0; k < ring_.size(); ++k) {
    auto it = start + std::ptrdiff_t(k);
    if (it >= ring_.end()) it -= std::ptrdiff_t(ring_.size());
    if (takes_messages(slots_[it->second])) return it->second;
  }
  return npos;
}

void pool_ledger::set_alive(std::size_t index, bool alive, std::string id) {
  auto& s = slots_.at(index);
  s.alive = alive;
  // A dead slot's messages are failed by its owner; a restarted one keeps its queued messages.
  if (!alive) s.in_flight = 0;
  if (!id.empty()) {
    s.id = std::move(id);
    s.peak_in_flight = s.in_flight;  // a new instance
  }
}

std::size_t pool_ledger::total_in_flight() const {
  std::size_t n = 0;
  for (auto& s : slots_) n += s.in_flight;
  return n;
}

std::size_t pool_ledger::find(const std::string& id) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].alive && slots_[i].id == id) return i;
  return npos;
}

std::size_t pool_ledger::room() const {
  std::size_t total = 0;
  std::size_t least = std::size_t(-1);
  bool any = false;
  for (auto& s : slots_) {
    if (!takes_messages(s)) continue;
    any = true;
    std::size_t free = s.in_flight < credits_ ? credits_ - s.in_flight : 0;
    total += free;
    least = std::min(least, free);
  }
  if (!any) return 0;
  std::size_t r = kind_ == router_kind::broadcast ? least : total;
  return r > held_ ? r - held_ : 0;
}

std::uint32_t pool_ledger::consumers() const {
  std::uint32_t n = 0;
  for (auto& s : slots_) n += takes_messages(s) ? 1 : 0;
  return n;
}

std::size_t pool_ledger::take_credit_request() {
  if (paused_) return 0;
  std::size_t r = room();
  if (r <= requested_) return 0;
  std::size_t ask = r - requested_;
  // Credit goes back in chunks of half the pool's window, as the best AMQP consumers ack with
  // `multiple` every prefetch/2: the MQS then hands over bigger batches, and every hop (its turn,
  // the WebSocket frame, the broker's ack and refill, the host's read) carries more messages. While
  // credit asked earlier is still outstanding the workers have messages coming; once none is, the
  // room is asked for whatever it is, so a pool never waits for credit it did not ask for.
  if (requested_ > 0 && ask < refill_chunk()) return 0;
  requested_ += ask;
  return ask;
}

std::size_t pool_ledger::refill_chunk() const {
  const std::size_t window = kind_ == router_kind::broadcast ? credits_ : credits_ * consumers();
  return std::max<std::size_t>(1, window / 2);
}

void pool_ledger::on_delivery() {
  if (requested_ > 0) --requested_;
}

std::vector<std::size_t> pool_ledger::select(std::string_view hash_key) {
  std::vector<std::size_t> out;
  const std::size_t n = slots_.size();
  if (n == 0) return out;
  switch (kind_) {
    case router_kind::consistent_hash: {
      auto owner = owner_of(hash_key);
      if (owner != npos && has_room(slots_[owner])) out.push_back(owner);
      return out;
    }
    case router_kind::smallest_mailbox:
      if (auto best = smallest_mailbox(); best != npos) {
        next_ = (best + 1) % n;
        out.push_back(best);
      }
      return out;
    case router_kind::scatter_gather:
      // A copy to every worker with room: a full worker is skipped rather than stalling the pool.
      for (std::size_t i = 0; i < n; ++i)
        if (has_room(slots_[i])) out.push_back(i);
      return out;
    case router_kind::broadcast:
      for (std::size_t i = 0; i < n; ++i)
        if (has_room(slots_[i])) out.push_back(i);
      // A broadcast goes to every alive worker or waits until all have room.
      for (auto& s : slots_)
        if (takes_messages(s) && !has_room(s)) return {};
      return out;
    case router_kind::random: {
      std::vector<std::size_t> eligible;
      for (std::size_t i = 0; i < n; ++i)
        if (has_room(slots_[i])) eligible.push_back(i);
      if (eligible.empty()) return out;
      std::uniform_int_distribution<std::size_t> pick(0, eligible.size() - 1);
      out.push_back(eligible[pick(rng_)]);
      return out;
    }
    case router_kind::round_robin:
    case router_kind::tail_chopping:
    case router_kind::custom:
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t i = (next_ + k) % n;
        if (has_room(slots_[i])) {
          next_ = (i + 1) % n;
          out.push_back(i);
          return out;
        }
      }
      return out;
  }
  return out;
}

std::size_t pool_ledger::smallest_mailbox() const {
  // Fewest messages in flight. Among busy workers with as many, the one whose current message
  // started last (one stuck on a long message is likely to stay busy); other ties go round-robin
  // (from next_) so equal workers share the load.
  const std::size_t n = slots_.size();
  std::size_t best = npos;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t i = (next_ + k) % n;
    if (!has_room(slots_[i])) continue;
    const auto& s = slots_[i];
    if (best == npos || s.in_flight < slots_[best].in_flight ||
        (s.in_flight == slots_[best].in_flight && s.in_flight > 0 && s.busy_since > slots_[best].busy_since))
      best = i;
  }
  return best;
}

std::size_t pool_ledger::select_other(const std::vector<std::size_t>& asked) {
  const std::size_t n = slots_.size();
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t i = (next_ + k) % n;
    if (has_room(slots_[i]) && std::find(asked.begin(), asked.end(), i) == asked.end()) {
      next_ = (i + 1) % n;
      return i;
    }
  }
  return npos;
}

std::vector<std::size_t> pool_ledger::select_custom(const std::vector<std::size_t>& chosen) {
  std::vector<std::size_t> out;
  for (auto i : chosen)
    if (i < slots_.size() && takes_messages(slots_[i]) && std::find(out.begin(), out.end(), i) == out.end())
      out.push_back(i);
  if (out.empty()) return select();
  return out;
}

void pool_ledger::assign(std::size_t index) {
  auto& s = slots_.at(index);
  if (s.in_flight++ == 0 && kind_ == router_kind::smallest_mailbox)
    s.busy_since = std::chrono::steady_clock::now();
  s.peak_in_flight = std::max(s.peak_in_flight, s.in_flight);
}

void pool_ledger::finish(std::size_t index) {
  auto& s = slots_.at(index);
  if (s.in_flight > 0) --s.in_flight;
  if (s.in_flight > 0 && kind_ == router_kind::smallest_mailbox)
    s.busy_since = std::chrono::steady_clock::now();
}

std::vector<worker_info> pool_ledger::snapshot() const {
  std::vector<worker_info> out;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    out.push_back({i, slots_[i].id, slots_[i].path, slots_[i].in_flight, has_room(slots_[i])});
  return out;
}

std::string sub_pool_ledger::key_of(const message& m) const {
  if (!enabled() || !m.body().is_object()) return {};
  auto it = m.body().find(spec_.key);
  if (it == m.body().end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::size_t sub_pool_ledger::capacity(const std::string& key) const {
  auto it = spec_.capacity.find(key);
  return it != spec_.capacity.end() ? it->second : spec_.default_capacity;
}

bool sub_pool_ledger::has_room(const std::string& key) const {
  auto cap = capacity(key);
  return cap == 0 || in_flight(key) < cap;
}

void sub_pool_ledger::finish(const std::string& key) {
  auto it = in_flight_.find(key);
  if (it == in_flight_.end()) return;
  if (--it->second == 0) in_flight_.erase(it);
}

std::size_t sub_pool_ledger::in_flight(const std::string& key) const {
  auto it = in_flight_.find(key);
  return it == in_flight_.end() ? 0 : it->second;
}

}  // namespace dde::host
