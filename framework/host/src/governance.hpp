#pragma once
// A pool's governance: its rate and in-flight limit (the rate gate its local workers share), the
// pauses a rate-limited worker or a replica puts on the whole pool (announced to the replicas through
// the MQS, pause_governor deciding which), and the dead letters of the messages it gives up on.
// Runs on the router's strand.

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "dde/message.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "mqs_link.hpp"
#include "pause_governor.hpp"
#include "pool_figures.hpp"
#include "runtime.hpp"

namespace dde::host {

class governance {
 public:
  /// `spec` is the pool's, whose rate set_rate changes.
  governance(pool_spec& spec, mqs_link& link, pool_figures& figures);

  /// The gate every local worker of the pool passes before a message starts.
  const std::shared_ptr<rate_gate>& gate() const { return gate_; }
  /// A new rate and in-flight limit (0 = none): in the gate and in the spec describe shows.
  void set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight);

  /// No message of the pool starts for `delay`; `broadcast` (a worker here was hit) tells the replicas.
  void pause(std::chrono::milliseconds delay, const std::string& reason, bool broadcast);
  /// A pause that came through the MQS from `origin` (`<mqs id>/<instance>`): a replica's, or our own
  /// coming back, which changes nothing. At most the pool's backoff.maxDelayMs.
  void paused_by(std::chrono::milliseconds delay, const std::string& reason, const std::string& origin);

  /// Sends `m` to dde.dead.<queue> (dead_letter_body).
  void dead_letter(const message& m, int attempts, const std::string& reason, const std::string& md5);
  /// The whole envelope with `deadLetter`: reason, attempts, pool, at, and the md5 of the version
  /// that failed it ("": none known); counts and logs it.
  std::string dead_letter_body(const message& m, int attempts, const std::string& reason,
                               const std::string& md5);

  /// A message of a pool with `retry.delays` failed (`failure`) for the `failures`th time: a copy goes
  /// to the delay queue of its next delay or, the delays spent, to dde.dead.<queue>. `settled` runs
  /// once the broker has the copy (true: ack the original) or refused it (false: give it back).
  void retry_later(const message& m, int failures, const std::string& failure, const std::string& md5,
                   std::function<void(bool confirmed)> settled);

  /// describe's "governance".
  nlohmann::json describe() const;

 private:
  pool_spec& spec_;
  mqs_link& link_;
  pool_figures& figures_;
  std::shared_ptr<rate_gate> gate_;
  pause_governor governor_;
};

}  // namespace dde::host
