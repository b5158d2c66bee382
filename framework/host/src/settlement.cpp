#include "settlement.hpp"

namespace dde::host {

settlement::settlement(const pool_spec& spec, mqs_link& link, pool_figures& figures, governance& governance,
                       poison_filter& poison, guard_fn guard, std::function<std::string()> version)
    : spec_(spec),
      link_(link),
      figures_(figures),
      governance_(governance),
      poison_(poison),
      guard_(std::move(guard)),
      version_(std::move(version)) {}

void settlement::settle(const delivery& d) {
  if (!at_least_once()) return;
  bool dead_letter = spec_.supervision.dead_letter && !d.canary_failed;
  if (d.failed && d.retry_copy && !d.failure.empty() && !d.canary_failed) {
    retry_later(d);
  } else if (d.failed) {
    link_.nack(d.generation, d.tag, !dead_letter);
    if (dead_letter) ++figures_.count().dead_lettered;  // the broker moves it to dde.dead.<queue>
  } else {
    answered(d);
    if (!d.poison_id.empty()) poison_.done(d.poison_id);
  }
}

void settlement::answered(const delivery& d) {
  if (!at_least_once()) return;
  link_.ack(d.generation, d.tag);
  ++figures_.count().acked;
}

void settlement::retry_later(const delivery& d) {
  // The link holds the callback until the broker answers; guarded, it is dropped if the pool is gone
  // by then (its unacked original comes back from the queue too).
  governance_.retry_later(*d.retry_copy, d.earlier_failures + 1, d.failure, version_(),
                          guard_([this, generation = d.generation, tag = d.tag](bool confirmed) {
                            if (confirmed)
                              link_.ack(generation, tag);
                            else
                              link_.nack(generation, tag, true);
                          }));
}

bool settlement::dead_letter_poison(std::uint64_t generation, std::uint64_t tag, const message& m) {
  if (!poison_.enabled()) return false;
  auto verdict = poison_.poisoned(m.id());
  if (!verdict) return false;
  governance_.dead_letter(m, verdict->failures,
                          "failed " + std::to_string(verdict->failures) + " times (supervision.maxFailures " +
                              std::to_string(poison_.limit()) + "); last failure: " + verdict->last_failure,
                          version_());
  link_.ack(generation, tag);  // it is in the dead-letter queue now
  return true;
}

void settlement::give_back(std::uint64_t generation, std::uint64_t tag) {
  if (at_least_once()) link_.nack(generation, tag, true);
}

}  // namespace dde::host
