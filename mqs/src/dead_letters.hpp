#pragma once
// The dead-letter desk: GET /dlq, POST /dlq/replay and POST /dlq/purge (mqs/PROTOCOL.md, "Dead letters").
// Like the queue inspector it has its own thread and AMQP connection (rabbitmq-c blocks; the Asio
// threads never wait on it), and serves one request at a time, so two replays never hold the same
// dead letters. `serve` is the work of one request over a session, for tests over a fake one.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "amqp_session.hpp"
#include "dde/mqs/config.hpp"
#include "dead_letter.hpp"

namespace dde::mqs {

enum class dlq_action { list, replay, purge };

/// An HTTP answer: its status and JSON body (`{"error": ...}` when it failed).
struct dlq_answer {
  int status = 200;
  nlohmann::json body;
};

/// Does `action` for `request` over `session` (channels 1 and 2 are the desk's). `now_us` stamps
/// replayed messages (their `timestamp`). A broken session is marked so (the caller drops it).
dlq_answer serve(amqp_session& session, dlq_action action, const dlq_request& request, std::uint64_t now_us);

class dead_letter_desk {
 public:
  explicit dead_letter_desk(const config& cfg, broker_env env = {});
  ~dead_letter_desk();
  dead_letter_desk(const dead_letter_desk&) = delete;
  dead_letter_desk& operator=(const dead_letter_desk&) = delete;

  /// Thread-safe: queues the request; `done` runs later on the desk's thread.
  void ask(dlq_action action, dlq_request request, std::function<void(dlq_answer)> done);
  /// Joins the thread; requests not yet served are answered 503.
  void stop();

 private:
  struct job {
    dlq_action action;
    dlq_request request;
    std::function<void(dlq_answer)> done;
  };
  void run();
  dlq_answer answer(const job& j);

  config cfg_;
  broker_env env_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<job> jobs_;
  bool stopping_ = false;
  std::unique_ptr<amqp_session> session_;  ///< owned by the thread
  std::thread thread_;
};

}  // namespace dde::mqs
