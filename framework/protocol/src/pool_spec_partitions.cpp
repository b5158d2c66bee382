// A pool's `partitions` field (partitioned pools): its parser. Beside pool_spec_parse.cpp, which
// calls it for the field.
#include "dde/protocol/mqs_request.hpp"
#include "dde/protocol/pool_spec.hpp"

namespace dde {

/// partitions: {"count": N, "key": "field"}. A partitioned pool hashes its messages by the key, so its
/// router is consistentHash on that key.
std::string parse_partitions(const nlohmann::json& body, pool_spec& spec) {
  auto found = body.find("partitions");
  if (found == body.end() || found->is_null()) return {};
  const auto* p = &*found;
  if (!p->is_object()) return R"(field "partitions" must be an object: {"count": 16, "key": "customerId"})";
  for (auto it = p->begin(); it != p->end(); ++it)
    if (it.key() != "count" && it.key() != "key")
      return "unknown field \"partitions." + it.key().substr(0, 100) + "\": partitions has count and key";
  auto count = p->find("count");
  if (count == p->end() || !count->is_number_integer() || count->get<std::int64_t>() < 1 ||
      count->get<std::int64_t>() > mqs::max_partitions)
    return "field \"partitions.count\" must be a whole number 1.." + std::to_string(mqs::max_partitions);
  auto key = p->find("key");
  if (key == p->end() || !key->is_string() || !valid_name(key->get_ref<const std::string&>()))
    return R"(field "partitions.key" must be the name of a message body field ([A-Za-z0-9_-], at most 100 characters))";
  spec.partitions = {std::uint32_t(count->get<std::int64_t>()), key->get<std::string>()};
  if (spec.mode != delivery_mode::at_least_once)
    return "a partitioned pool is at-least-once: its partitions move between replicas only once what "
           "they hold is acknowledged";
  // roundRobin is what the thesis's clients send when they mean no router in particular.
  if (spec.router != router_kind::consistent_hash && spec.router != router_kind::round_robin)
    return "a partitioned pool routes by its key: routerType " + spec.router_type +
           " cannot keep a key's messages in order; leave it out or make it consistentHash";
  if (!spec.hash_key.empty() && spec.hash_key != spec.partitions.key)
    return "hashKey \"" + spec.hash_key + "\" differs from partitions.key \"" + spec.partitions.key + "\"";
  spec.router = router_kind::consistent_hash;
  spec.router_type = "consistentHash";
  spec.hash_key = spec.partitions.key;
  return {};
}

}  // namespace dde
