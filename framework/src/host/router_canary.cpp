// The pool's side of canary hot deployment (host/canary judges): a new version goes to the canary's
// share of the local slots, the verdict's swaps run on the slots, and every message that ends on a
// worker counts under its version's md5.
#include <boost/asio/post.hpp>

#include "host/router.hpp"

namespace dde::host {

void router::count_version(std::size_t index, bool failed) {
  bool local = spec_.workers_paths[index] == "localhost";
  bool canary = canary_.on(index);
  version_meter::count(!local ? versions_.remote() : canary ? canary_.series() : versions_.running(), failed);
  if (local && !swap_.swapping) canary_.count(canary, failed);
}

result<bool> router::swap_to(std::shared_ptr<worker_plugin> plugin) {
  if (!canary_.enabled()) return begin_swap(std::move(plugin), swap_kind::version);
  std::vector<std::size_t> eligible;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (spec_.workers_paths[i] == "localhost" && !kill_requested(i) && !parked(i)) eligible.push_back(i);
  auto begun = canary_.begin(plugin, eligible, slots_.size());
  // Every local worker killed or parked: nothing to try it on, it replaces the old version as without a
  // canary.
  if (begun && !begun.value()) return begin_swap(std::move(plugin), swap_kind::version);
  return begun;
}

result<bool> router::swap_slots(std::shared_ptr<worker_plugin> plugin, canary_pool::step s,
                                std::vector<bool> only) {
  auto kind = s == canary_pool::step::try_it    ? swap_kind::canary_in
              : s == canary_pool::step::promote ? swap_kind::promote
                                                : swap_kind::roll_back;
  return begin_swap(std::move(plugin), kind, false, std::move(only));
}

void router::later(std::function<void()> fn) {
  boost::asio::post(strand_, [weak = weak_from_this(), fn = std::move(fn)] {
    if (weak.lock()) fn();
  });
}

nlohmann::json router::describe_canary() const {
  auto j = canary_.describe();
  const char* state = !canary_.judging()                 ? "starting"
                      : !swap_.swapping                  ? "running"
                      : swap_.kind == swap_kind::promote ? "promoting"
                                                         : "rollingBack";
  j["state"] = state;
  j["oldMd5"] = plugin_ ? plugin_->object().md5() : "";
  auto workers = nlohmann::json::array();
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (canary_.chosen(i)) workers.push_back(slots_[i].worker->id());
  j["workers"] = std::move(workers);
  return j;
}

}  // namespace dde::host
