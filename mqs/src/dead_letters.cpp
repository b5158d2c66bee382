#include "dead_letters.hpp"

#include <algorithm>
#include <set>

#include "dde/core/daemon.hpp"
#include "dde/log.hpp"

namespace dde::mqs {
namespace {

constexpr std::uint16_t get_channel = 1;      // basic.get of the dead letters, their acks and requeues
constexpr std::uint16_t publish_channel = 2;  // replays, in confirm mode
constexpr auto confirm_timeout = std::chrono::seconds(30);
constexpr int not_found = 404;

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.dlq");
  return l;
}

dlq_answer failed(int status, std::string error) { return {status, {{"error", std::move(error)}}}; }

dlq_answer ok(nlohmann::json body) { return {200, std::move(body)}; }

dlq_answer broker_failed(const amqp_session::result& r) { return failed(503, "broker: " + r.error); }

/// The dead letters held (basic.get, not yet acked) during one request; what is left is given back
/// to the queue, in its order, when the request ends.
class held_letters {
 public:
  held_letters(amqp_session& s, std::string queue) : s_(s), queue_(std::move(queue)) {}
  ~held_letters() { give_back(); }

  /// Takes the next message; false when the queue has no more (or `error` is set).
  bool next(dead_message& m, amqp_session::result& error) {
    bool empty = false;
    error = s_.get_message(get_channel, queue_, m, empty);
    if (!error.ok() || empty) return false;
    held_.insert(m.tag);
    return true;
  }
  std::string ack(std::uint64_t tag) {
    held_.erase(tag);
    return s_.ack(get_channel, tag, false);
  }
  /// Every message held and not acked goes back, in the order it had: one nack with `multiple` up to
  /// the last one still held (a tag already acked would close the channel).
  void give_back() {
    if (held_.empty()) return;
    if (auto e = s_.nack(get_channel, *held_.rbegin(), true, true); !e.empty())
      log()->warn("{}: could not give dead letters back ({}); the broker does when the connection ends",
                  queue_, e);
    held_.clear();
  }

 private:
  amqp_session& s_;
  std::string queue_;
  std::set<std::uint64_t> held_;
};

/// Passive queue.declare of `queue`: its depth, or nullopt when it does not exist (the channel is
/// opened again), or an error in `r`.
std::optional<std::uint32_t> depth_of(amqp_session& s, const std::string& queue, amqp_session::result& r) {
  std::uint32_t messages = 0, consumers = 0;
  r = s.queue_depth(get_channel, queue, messages, consumers);
  if (r.ok()) return messages;
  if (r.channel_closed && r.code == not_found) r = s.open_channel(get_channel);
  return std::nullopt;
}

nlohmann::json missing_ids(const dlq_request& req, const std::set<std::string>& found) {
  auto out = nlohmann::json::array();
  for (auto& id : req.ids)
    if (!found.count(id)) out.push_back(id);
  return out;
}

dlq_answer list(amqp_session& s, const dlq_request& req) {
  const auto queue = std::string(dead_letter_prefix) + req.topic;
  amqp_session::result r;
  auto depth = depth_of(s, queue, r);
  if (!r.ok()) return broker_failed(r);
  nlohmann::json out = {
      {"topic", req.topic}, {"depth", depth.value_or(0)}, {"messages", nlohmann::json::array()}};
  if (!depth) return ok(out);
  held_letters held(s, queue);
  dead_message m;
  std::size_t scanned = 0;
  const std::size_t scan = req.id ? dlq_max_scan : req.limit;
  while (scanned < scan && out["messages"].size() < req.limit && held.next(m, r)) {
    // The first basic.get's count is the depth: the passive declare may not count messages an earlier
    // request gave back a moment ago (the quorum queue applies returns asynchronously).
    if (scanned++ == 0) out["depth"] = std::max<std::uint64_t>(m.remaining + 1, *depth);
    if (req.id && dead_letter_id(m) != *req.id) continue;
    out["messages"].push_back(describe_dead_letter(m, req.topic));
  }
  if (!r.ok()) return broker_failed(r);
  if (req.id && out["messages"].empty())
    return failed(404, "no message \"" + *req.id + "\" in " + queue + " (looked through " +
                           std::to_string(scanned) + " of its messages)");
  return ok(std::move(out));
}

dlq_answer nothing_found(const std::string& error, const dlq_request& req,
                         const std::set<std::string>& found) {
  return {404, {{"error", error}, {"replayed", 0}, {"missing", missing_ids(req, found)}}};
}

dlq_answer replay(amqp_session& s, const dlq_request& req, std::uint64_t now_us) {
  const auto queue = std::string(dead_letter_prefix) + req.topic;
  amqp_session::result r;
  // A publish to a queue that does not exist is confirmed and dropped: make sure the pool's queue is there.
  if (!depth_of(s, req.topic, r)) {
    if (!r.ok()) return broker_failed(r);
    return failed(404, "queue " + req.topic + " does not exist: deploy the pool first; nothing was replayed");
  }
  auto depth = depth_of(s, queue, r);
  if (!r.ok()) return broker_failed(r);
  std::set<std::string> wanted(req.ids.begin(), req.ids.end()), found;
  if (!depth) {
    if (req.all) return ok(nlohmann::json{{"replayed", 0}, {"missing", nlohmann::json::array()}});
    return nothing_found("no dead-letter queue " + queue, req, found);
  }
  held_letters held(s, queue);
  std::vector<dead_message> chosen;
  dead_message m;
  for (std::size_t scanned = 0; scanned < dlq_max_scan && chosen.size() < req.limit; ++scanned) {
    if (!req.all && found.size() == wanted.size()) break;
    if (!held.next(m, r)) break;
    if (!req.all) {
      auto id = dead_letter_id(m);
      if (!wanted.count(id)) continue;
      found.insert(id);
    }
    chosen.push_back(std::move(m));
  }
  if (!r.ok()) return broker_failed(r);
  if (chosen.empty() && !req.all) return nothing_found("none of the ids is in " + queue, req, found);
  if (!chosen.empty()) {
    if (r = s.open_channel(publish_channel); !r.ok()) return broker_failed(r);
    if (r = s.confirm_select(publish_channel); !r.ok()) return broker_failed(r);
    for (auto& d : chosen) {
      auto out = replay_of(d, req.topic);
      amqp_session::publish_props p;
      p.delivery_mode = 2;
      p.message_id = out.props.message_id;
      p.app_id = out.props.app_id;
      p.content_type = out.props.content_type;
      p.headers = &out.props.headers;
      p.published_us = now_us;
      if (auto e = s.publish(publish_channel, "", req.topic, p, out.body); !e.empty())
        return failed(503, "broker: " + e + "; nothing was replayed (the dead letters stay)");
    }
    // Each dead letter is acked only once its copy is confirmed: nothing is lost. A crash (or a lost
    // connection) between the two leaves both: the only way a replay repeats a message.
    if (r = s.wait_confirms(publish_channel, chosen.size(), confirm_timeout); !r.ok())
      return failed(503, "broker: " + r.error + "; the dead letters stay (some may have been replayed too)");
    s.close_channel(publish_channel);
    for (auto& d : chosen)
      if (auto e = held.ack(d.tag); !e.empty()) return failed(503, "broker: " + e);
  }
  log()->info("{}: {} dead letter(s) replayed", req.topic, chosen.size());
  return ok(nlohmann::json{{"replayed", chosen.size()}, {"missing", missing_ids(req, found)}});
}

dlq_answer purge(amqp_session& s, const dlq_request& req) {
  const auto queue = std::string(dead_letter_prefix) + req.topic;
  amqp_session::result r;
  auto depth = depth_of(s, queue, r);
  if (!r.ok()) return broker_failed(r);
  if (!depth) {
    if (req.all) return ok(nlohmann::json{{"purged", 0}});
    return {404,
            {{"error", "no dead-letter queue " + queue}, {"purged", 0}, {"missing", missing_ids(req, {})}}};
  }
  if (req.all) {
    std::uint32_t count = 0;
    if (r = s.purge(get_channel, queue, count); !r.ok()) return broker_failed(r);
    log()->info("{}: {} dead letter(s) purged", req.topic, count);
    return ok(nlohmann::json{{"purged", count}});
  }
  std::set<std::string> wanted(req.ids.begin(), req.ids.end()), found;
  held_letters held(s, queue);
  dead_message m;
  std::size_t purged = 0;
  for (std::size_t scanned = 0; scanned < dlq_max_scan && found.size() < wanted.size() && held.next(m, r);
       ++scanned) {
    auto id = dead_letter_id(m);
    if (!wanted.count(id)) continue;
    found.insert(id);
    if (auto e = held.ack(m.tag); !e.empty()) return failed(503, "broker: " + e);
    ++purged;
  }
  if (!r.ok()) return broker_failed(r);
  if (purged == 0)
    return {
        404,
        {{"error", "none of the ids is in " + queue}, {"purged", 0}, {"missing", missing_ids(req, found)}}};
  log()->info("{}: {} dead letter(s) purged", req.topic, purged);
  return ok(nlohmann::json{{"purged", purged}, {"missing", missing_ids(req, found)}});
}

}  // namespace

dlq_answer serve(amqp_session& s, dlq_action action, const dlq_request& req, std::uint64_t now_us) {
  if (auto r = s.open_channel(get_channel); !r.ok()) return broker_failed(r);
  dlq_answer out;
  switch (action) {
    case dlq_action::list: out = list(s, req); break;
    case dlq_action::replay: out = replay(s, req, now_us); break;
    case dlq_action::purge: out = purge(s, req); break;
  }
  // Anything still held returns with the channel (held_letters gave it back already, in order).
  s.close_channel(get_channel);
  return out;
}

dead_letter_desk::dead_letter_desk(const config& cfg, broker_env env)
    : cfg_(cfg), env_(std::move(env)), thread_([this] { run(); }) {}

dead_letter_desk::~dead_letter_desk() { stop(); }

void dead_letter_desk::ask(dlq_action action, dlq_request request, std::function<void(dlq_answer)> done) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      jobs_.push_back({action, std::move(request), std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(failed(503, "the MQS is stopping"));
}

void dead_letter_desk::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void dead_letter_desk::run() {
  dde::name_this_thread("mqs-dlq");
  for (;;) {
    std::vector<job> batch;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      batch.swap(jobs_);
      if (stopping_) {
        for (auto& j : batch) j.done(failed(503, "the MQS is stopping"));
        break;
      }
    }
    for (auto& j : batch) j.done(answer(j));
  }
  session_.reset();
}

dlq_answer dead_letter_desk::answer(const job& j) {
  // One retry for a list: a connection idle since the last request may have been closed by the
  // broker. A replay or purge is not retried: it may have done part of its work.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!session_) {
      auto params = broker_params_for(cfg_, "dde-mqs dead letters", 0);
      std::string error;
      session_ = env_.open(params, error);
      if (!session_) return failed(503, "no broker connection: " + error);
    }
    auto now = std::chrono::duration_cast<std::chrono::microseconds>(env_.wall_now().time_since_epoch());
    auto out = serve(*session_, j.action, j.request, std::uint64_t(now.count()));
    bool broken = out.status == 503;
    if (broken) {
      session_->mark_broken();
      session_.reset();
    }
    if (!broken || j.action != dlq_action::list || attempt == 1) return out;
  }
  return failed(503, "no broker connection");
}

}  // namespace dde::mqs
