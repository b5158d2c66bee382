#include "deliveries.hpp"

#include <algorithm>

namespace dde::host {

std::pair<std::uint64_t, delivery&> delivery_table::open() {
  auto id = next_++;
  return {id, table_[id]};
}

delivery* delivery_table::find(std::uint64_t id) {
  auto it = table_.find(id);
  return it == table_.end() ? nullptr : &it->second;
}

delivery* delivery_table::held_by(std::uint64_t id, std::size_t index) {
  auto* d = find(id);
  if (!d || std::find(d->pending.begin(), d->pending.end(), index) == d->pending.end()) return nullptr;
  return d;
}

delivery* delivery_table::release(std::uint64_t id, std::size_t index) {
  auto* d = find(id);
  if (!d) return nullptr;
  auto at = std::find(d->pending.begin(), d->pending.end(), index);
  if (at == d->pending.end()) return nullptr;
  d->pending.erase(at);
  return d;
}

std::vector<std::uint64_t> delivery_table::held_by(std::size_t index) const {
  std::vector<std::uint64_t> out;
  for (auto& [id, d] : table_)
    if (std::find(d.pending.begin(), d.pending.end(), index) != d.pending.end()) out.push_back(id);
  return out;
}

std::vector<std::string> delivery_table::sub_keys() const {
  std::vector<std::string> out;
  out.reserve(table_.size());
  for (auto& [id, d] : table_) out.push_back(d.sub_key);
  return out;
}

}  // namespace dde::host
