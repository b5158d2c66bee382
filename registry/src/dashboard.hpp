#pragma once
// The registry's dashboard and operational endpoints: the static page (registry/web, compiled in),
// GET /metrics and GET /health, and the live feed at WebSocket /dashboard/live. A "round" asks every
// node to describe itself and the MQSs for their topics' figures, then updates the pool_monitor;
// rounds run while a page watches (every `interval`) and for each /metrics scrape. Single-threaded:
// the service calls it, and the callbacks it is given run, on the registry's strand.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "dde/net/ws.hpp"
#include "mqs_stats_client.hpp"
#include "node_table.hpp"
#include "pool_monitor.hpp"

namespace dde::registry {

class dashboard {
 public:
  /// Runs a function on the registry's strand (from any thread), now or after a delay.
  using post_fn = std::function<void(std::function<void()>)>;
  using schedule_fn = std::function<void(std::chrono::milliseconds, std::function<void()>)>;

  dashboard(node_table& nodes, post_fn post, schedule_fn schedule, std::chrono::milliseconds interval,
            std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());
  ~dashboard();

  /// Answers `/`, the static files, GET /metrics, GET /health and GET /registry/status (true); false for
  /// any other request.
  bool handle(const net::http_request& req, const std::function<void(net::http_response)>& respond);

  /// Fields `GET /health` adds (the registry's role: active or standby, and its store).
  void set_role_status(std::function<ordered_json()> fn) { role_status_ = std::move(fn); }

  /// A page opened the live feed: it gets the last snapshot now and every round's from then on.
  void watch(std::shared_ptr<net::ws_connection> conn);
  void unwatch(std::uint64_t conn_id);
  /// Closes the feeds and stops the MQS client thread.
  void stop();

 private:
  void round(std::function<void()> then);
  void finish_round(std::vector<node_sample> samples, std::map<std::string, topic_sample> figures,
                    std::string error);
  void schedule_next();
  void answer_metrics(const std::function<void(net::http_response)>& respond);
  /// GET /registry/status: the pools of every node with their rates (the live feed's snapshot).
  void answer_status(const std::function<void(net::http_response)>& respond);

  node_table& nodes_;
  post_fn post_;
  schedule_fn schedule_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point started_;
  std::function<ordered_json()> role_status_;
  pool_monitor monitor_;
  std::unique_ptr<mqs_stats_client> mqs_;
  std::map<std::uint64_t, std::shared_ptr<net::ws_connection>> watchers_;
  bool running_ = false;
  bool scheduled_ = false;
  bool stopped_ = false;
  std::vector<std::function<void()>> waiting_;  ///< run when the running round ends
  std::uint64_t rounds_ = 0;
  std::chrono::steady_clock::time_point last_round_{};
};

}  // namespace dde::registry
