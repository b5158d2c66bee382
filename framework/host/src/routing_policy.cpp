#include "routing_policy.hpp"

#include "runtime.hpp"

namespace dde::host {
namespace {

class built_in final : public routing_policy {
 public:
  std::vector<std::size_t> pick(const message&, pool_ledger& ledger) override { return ledger.select(); }
};

class consistent_hash final : public routing_policy {
 public:
  explicit consistent_hash(std::string key) : key_(std::move(key)) {}
  std::vector<std::size_t> pick(const message& m, pool_ledger& ledger) override {
    // The key's value as it is for a string, as JSON otherwise; a message without it hashes by its id.
    if (m.body().is_object()) {
      auto it = m.body().find(key_);
      if (it != m.body().end() && !it->is_null())
        return ledger.select(it->is_string() ? it->get<std::string>() : it->dump());
    }
    return ledger.select(m.id());
  }

 private:
  std::string key_;
};

class custom final : public routing_policy {
 public:
  custom(std::shared_ptr<router_plugin> plugin, router_plugin::policy_ptr policy)
      : plugin_(std::move(plugin)), policy_(std::move(policy)) {}
  std::vector<std::size_t> pick(const message& m, pool_ledger& ledger) override {
    return ledger.select_custom(policy_->select_worker(m, ledger.snapshot()));
  }

 private:
  std::shared_ptr<router_plugin> plugin_;  ///< outlives the policy it made
  router_plugin::policy_ptr policy_;
};

}  // namespace

result<std::unique_ptr<routing_policy>> routing_policy::make(const pool_spec& spec) {
  using made = result<std::unique_ptr<routing_policy>>;
  if (spec.router == router_kind::consistent_hash)
    return made(std::make_unique<consistent_hash>(spec.hash_key));
  if (spec.router != router_kind::custom) return made(std::make_unique<built_in>());
  auto plugin = router_plugin::load(spec.router_uri);
  if (!plugin) return made::failure_of(plugin);
  auto policy = plugin.value()->create();
  if (!policy) return made::failure_of(policy);
  return made(std::make_unique<custom>(plugin.value(), std::move(policy.value())));
}

}  // namespace dde::host
