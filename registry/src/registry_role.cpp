#include "registry_role.hpp"

#include "dde/log.hpp"

namespace dde::registry {

registry_role::registry_role(state_store* store, hooks h) : store_(store), hooks_(std::move(h)) {}

void registry_role::poll() {
  auto log = logger("registry");
  auto lead = store_ ? store_->lead() : lead_result{true, {}, {}};
  bool news = lead.why != why_ || lead.leader != leader_;
  why_ = std::move(lead.why);
  leader_ = std::move(lead.leader);
  if (active_ == lead.leading) {
    if (!active_ && news) log->info("standby: {}{}", why_, leader_.empty() ? "" : " (" + leader_ + ")");
    return;
  }
  if (!lead.leading) {
    active_ = false;
    log->error("stepping down to standby: {}", why_);
    hooks_.step_down(why_);
    return;
  }
  active_ = true;
  if (polls()) log->info("active: this registry holds the lock of the {}", store_->name());
  try {
    hooks_.activate();
  } catch (const std::exception& e) {
    // The state could not be loaded: acting without it would forget nodes. The next poll tries again.
    active_ = false;
    why_ = std::string("cannot take over: ") + e.what();
    log->error("{}", why_);
    hooks_.step_down(why_);
    if (!polls()) throw;
  }
}

std::string registry_role::standby_reason() const {
  std::string out = "this registry is a standby (" + why_ + ")";
  if (!leader_.empty()) out += "; the active registry is " + leader_;
  return out;
}

ordered_json registry_role::status() const {
  ordered_json out = {{"role", active_ ? "active" : "standby"}};
  if (store_) out["store"] = store_->name();
  if (!active_) {
    out["reason"] = why_;
    if (!leader_.empty()) out["leader"] = leader_;
  }
  return out;
}

}  // namespace dde::registry
