#pragma once
// First-reply-wins pools (scatter-gather, tail-chopping): several workers may hold copies of one
// message; the first that replies to it wins, later replies are dropped and counted. Worker cells
// ask from their own strands right before they send a reply, so the table has its own lock.

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dde::host {

class reply_race {
 public:
  struct counts {
    std::uint64_t answered = 0;  ///< messages whose first reply went out
    std::uint64_t dropped = 0;   ///< later replies to an answered message, not sent
    std::uint64_t copies = 0;    ///< copies handed to workers (one message, several copies)
    std::uint64_t chopped = 0;   ///< tail-chopping: copies sent because no reply came in time
  };

  /// A message of the pool is being raced (its copies are in workers): replies to it are claimed.
  void open(const std::string& message_id);
  /// Its last copy finished: replies to it are no longer watched.
  void close(const std::string& message_id);
  /// Asked before a reply to `message_id` is sent: true for the first (and for a message not raced).
  bool claim(const std::string& message_id);
  /// Whether a reply to `message_id` went out.
  bool answered(const std::string& message_id) const;
  void count_copies(std::uint64_t n, bool chopped);
  counts snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, int> open_;  ///< message id -> 1 once answered, 0 before
  counts counts_;
};

}  // namespace dde::host
