#include "partitions.hpp"

#include <nlohmann/json.hpp>

namespace dde::mqs {
namespace {

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::uint32_t partition_of(std::string_view body, const partitioning& p, std::string_view message_id) {
  if (p.count <= 1) return 0;
  auto json = nlohmann::json::parse(body, nullptr, false);
  std::uint64_t h = 0;
  if (json.is_object()) {
    if (auto it = json.find(p.key); it != json.end() && !it->is_null())
      h = fnv1a(it->is_string() ? it->get_ref<const std::string&>() : it->dump());
    else
      h = fnv1a(message_id);
  } else {
    h = fnv1a(message_id);
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
