#pragma once
// Autoscaling by queue depth, as a component of a router: every `scale.sampleMs` it asks how many
// messages wait in the pool's queue, the scale policy says how many workers the pool should have,
// and the pool grows or shrinks through scaling_target. It owns its sampling timer, the figures
// describe shows (backlog, peak, ups and downs, the latest changes) and the pool's workersPaths as
// deployed. Runs on the router's strand with the router's clock.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clock.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "scale_policy.hpp"

namespace dde::host {

/// What the autoscaler needs of its pool.
class scaling_target {
 public:
  virtual ~scaling_target() = default;
  /// Workers not killed or parked, and those of them alive and holding nothing.
  virtual std::size_t active_workers() const = 0;
  virtual std::size_t idle_workers() const = 0;
  /// Its slots are changing already (a plugin swap or a restart): no scaling now.
  virtual bool slots_changing() const = 0;
  /// Adds up to `n` workers, parks up to `n` idle ones; the pool then asks for credit as it needs.
  virtual void grow(std::size_t n) = 0;
  virtual void shrink(std::size_t n) = 0;
  /// Asks the queue's depth; `answer` runs later on the router's strand, unless the pool is gone.
  virtual void ask_depth(std::function<void(std::uint64_t backlog, std::string error)> answer) = 0;
  /// The workers changed: held messages may go out, more credit may be asked.
  virtual void scaled() = 0;
};

class autoscaler {
 public:
  autoscaler(host::clock& clock, const strand_type& strand, const pool_spec& spec, scaling_target& pool);

  bool enabled() const { return policy_.spec().enabled(); }
  /// Samples from now on (again after stop()).
  void start();
  void stop();
  /// A depth sample came back (public for the router's strand to call, and for tests).
  void on_depth(std::uint64_t backlog, const std::string& error);
  /// The pool could not add a worker: shown in describe until a sample succeeds.
  void cannot_add(const std::string& why) { error_ = why; }
  /// Where the pool says it scaled itself (the activator's poolScaled event, activator/PROTOCOL.md).
  void set_events(std::function<void(nlohmann::json)> events) { events_ = std::move(events); }
  /// workersPaths as deployed, workersCount and scaling, into the pool's description.
  void describe(nlohmann::json& pool, std::size_t active) const;

 private:
  void sample();

  host::clock& clock_;
  strand_type strand_;
  std::string name_;     ///< the pool, for logs
  std::string isolate_;  ///< its isolate name, for events
  std::function<void(nlohmann::json)> events_;
  scaling_target& pool_;
  scale_policy policy_;
  std::vector<std::string> deployed_paths_;
  std::unique_ptr<timer> sampler_;
  bool running_ = false;
  bool asking_ = false;
  clock::time_point asked_at_{};
  std::uint64_t backlog_ = 0;
  std::string error_;  ///< why the last depth sample failed ("" = it did not)
  struct tally {
    std::uint64_t ups = 0, downs = 0;
    std::size_t peak = 0;
    std::deque<nlohmann::json> changes;  ///< the latest changes, newest last
  } tally_;
};

}  // namespace dde::host
