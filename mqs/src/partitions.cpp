#include "partitions.hpp"

#include <nlohmann/json.hpp>

#include "dde/core/stable_hash.hpp"

namespace dde::mqs {
std::uint32_t partition_of(std::string_view body, const partitioning& p, std::string_view message_id) {
  if (p.count <= 1) return 0;
  auto json = nlohmann::json::parse(body, nullptr, false);
  std::uint64_t h = 0;
  if (json.is_object()) {
    if (auto it = json.find(p.key); it != json.end() && !it->is_null())
      h = stable_hash(it->is_string() ? it->get_ref<const std::string&>() : it->dump());
    else
      h = stable_hash(message_id);
  } else {
    h = stable_hash(message_id);
  }
  return std::uint32_t(h % p.count);
}

void partition_directory::learn(const std::string& topic, partitioning p) {
  std::lock_guard lock(mutex_);
  topics_[topic] = std::move(p);
  empty_.store(false, std::memory_order_release);
}

std::optional<partitioning> partition_directory::find(const std::string& topic) const {
  if (empty()) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return std::nullopt;
  return it->second;
}

}  // namespace dde::mqs
