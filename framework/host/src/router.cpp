// The router's core: start and shutdown, dispatch through the routing policy, credits, and the
// end of each message (ack, nack, sub-pool room, held messages).
#include "router.hpp"

#include <algorithm>
#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/runtime/load_failures.hpp"
#include "proxy_cell.hpp"

namespace dde::host {
router::router(boost::asio::io_context& io, std::shared_ptr<mqs_link> top, pool_spec spec,
               std::shared_ptr<host::clock> clock)
    : strand_(boost::asio::make_strand(io)),
      clock_(std::move(clock)),
      top_(std::move(top)),
      pool_(std::move(spec)),
      figures_(pool_.topic),
      asks_(*clock_, strand_, pool_.topic, ask_timeout),
      first_reply_(*clock_, strand_, pool_.spec, *this),
      supervision_(pool_.spec),
      watch_(*clock_, strand_, pool_.spec.ping_after, pool_.spec.pong_timeout, *this),
      governance_(pool_.spec, *top_, figures_),
      hot_(*clock_, strand_, pool_.spec, *this,
           [this](plugin_source::fetch_done fn) -> plugin_source::fetch_done {
             // Only a weak reference waits with the download: the fetcher belongs to the router.
             return [weak = weak_from_this(), fn = std::move(fn)](fetch_result fetched) {
               auto self = weak.lock();
               if (!self) return;
               boost::asio::post(self->strand_, [self, fn, fetched = std::move(fetched)]() mutable {
                 fn(std::move(fetched));
               });
             };
           }),
      scaling_(*clock_, strand_, pool_.spec, *this),
      lifecycle_(*clock_, strand_, pool_.spec.addr().str()) {
  touch_plugin_load_failures(pool_.topic);
}

router::~router() = default;

std::shared_ptr<cell> router::make_cell(std::size_t index, const std::shared_ptr<worker_plugin>& plugin) {
  const auto& path = pool_.spec.workers_paths[index];
  if (path != "localhost")
    return std::make_shared<proxy_cell>(strand_.get_inner_executor().context(), weak_from_this(),
                                        pool_.shared, path, index);
  auto c = std::make_shared<worker_cell>(strand_.get_inner_executor().context(), weak_from_this(),
                                         pool_.shared, plugin, index);
  c->set_gate(governance_.gate());
  return c;
}

bool router::renew_slot(std::size_t index) {
  auto c = make_cell(index, hot_.plugin_for(index));
  auto made = c->create();
  auto& s = flow_.slots[index];
  if (!made) {
    flow_.ledger.set_alive(index, false);
    s.error = made.error();
    count_plugin_load_failure(pool_.topic, made.code<plugin_failure>());
    return false;
  }
  s.worker = c;
  s.error.clear();
  // A proxy's slot opens once its remote worker is spawned (worker_up).
  flow_.ledger.set_alive(index, pool_.spec.workers_paths[index] == "localhost", c->id());
  watch_.renew(index);
  c->start();
  return true;
}

void router::set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache) {
  events_ = events;
  hot_.set_events(std::move(events), std::move(plugin_cache));
}

void router::set_fetch_options(fetch_options options) { hot_.set_fetch_options(std::move(options)); }

void router::prepare(std::function<void(result<bool>)> ready) { hot_.prepare(std::move(ready)); }

result<bool> router::start() {
  std::size_t remote = 0;
  for (auto& path : pool_.spec.workers_paths) remote += path != "localhost";
  auto loaded = hot_.load(remote < pool_.spec.workers_paths.size() || pool_.spec.scale.enabled(), remote);
  if (!loaded) return loaded;
  auto routing = routing_policy::make(pool_.spec);
  if (!routing) return result<bool>::failure_of(routing);
  flow_.routing = std::move(routing.value());
  watch_.resize(pool_.spec.workers_paths.size());
  for (std::size_t i = 0; i < pool_.spec.workers_paths.size(); ++i) {
    const auto& path = pool_.spec.workers_paths[i];
    auto c = make_cell(i, hot_.plugin());
    auto made = c->create();
    if (!made) {
      flow_.slots.clear();
      return result<bool>::failure_of(made);
    }
    flow_.ledger.add_worker(c->id(), path);
    // A proxy's slot opens once its remote worker is spawned.
    if (path != "localhost") flow_.ledger.set_alive(i, false);
    flow_.slots.push_back(slot{std::move(c), {}, kill_phase::none, 0, false});
  }
  for (auto& s : flow_.slots) s.worker->start();
  hot_.start();
  if (pool_.spec.partitions.count)
    top_->partition(pool_.topic, pool_.spec.partitions.count, pool_.spec.partitions.key);
  top_->attach(pool_.topic, weak_from_this());
  // Pauses asked by a replica of this pool (or echoed back from our own) come through the MQS.
  top_->set_pause_handler(pool_.topic,
                          [weak = weak_from_this()](std::chrono::milliseconds ms, const std::string& reason,
                                                    const std::string& origin) {
                            if (auto self = weak.lock()) self->on_pause(ms, reason, origin);
                          });
  logger("host.router")
      ->info("{}: {} worker(s) of {} (md5 {}), router {}, {}", pool_.spec.addr().str(), flow_.slots.size(),
             pool_.spec.uri, hot_.plugin() ? hot_.md5() : "remote", pool_.spec.router_type,
             to_string(pool_.spec.mode));
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->request_credit();
    self->hot_.poll();
    self->watch_.start();
    self->scaling_.start();
  });
  return true;
}

void router::shutdown(std::chrono::milliseconds timeout, std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), timeout, done = std::move(done)]() mutable {
    self->lifecycle_.shut_down(timeout, [self, done = std::move(done)](bool timed_out) {
      if (timed_out)
        logger("host.router")
            ->warn("{}: {} message(s) still in flight after the shutdown timeout",
                   self->pool_.spec.addr().str(), self->flow_.ledger.total_in_flight());
      auto remaining = std::make_shared<std::size_t>(self->flow_.slots.size());
      auto finish = [self, remaining, done] {
        if (--*remaining > 0) return;
        boost::asio::post(self->strand_, [self, done] {
          self->top_->detach(self->pool_.topic);
          self->flow_.slots.clear();
          done();
        });
      };
      if (self->flow_.slots.empty()) {
        ++*remaining;
        finish();
        return;
      }
      for (auto& s : self->flow_.slots) s.worker->kill(finish);
    });
    self->hot_.stop();
    self->watch_.stop();
    self->asks_.stop();
    self->scaling_.stop();
    self->flow_.ledger.set_paused(true);
    self->top_->cancel(self->pool_.topic);
    // Held messages were never handed to a worker: give them back.
    self->give_back_held();
    self->lifecycle_.drained_if(self->flow_.ledger.total_in_flight());
  });
}

void router::deliver_reply(envelope e) {
  boost::asio::defer(strand_, [self = shared_from_this(), e = std::move(e)]() mutable {
    self->asks_.replied(e.in_reply_to);  // the round trip ends here, whether its worker is still there or not
    std::size_t index = self->flow_.ledger.find(e.to_worker);
    if (index == pool_ledger::npos) {
      // The asking instance is gone (restarted or removed): the reply has nowhere to go.
      ++self->figures_.count().replies_dropped;
      logger("host.router")
          ->debug("{}: reply for gone worker {} dropped", self->pool_.spec.addr().str(), e.to_worker);
      return;
    }
    ++self->figures_.count().replies;
    self->flow_.slots[index].worker->post_reply(to_message(std::move(e), false));
  });
}

void router::on_connected() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->flow_.ledger.reset_requested();
    self->request_credit();
  });
}

void router::enqueue(std::string topic, delivery_mode mode, const envelope& e) {
  figures_.sent();
  // An ask of one of this pool's workers (local, or remote through its proxy): its reply comes back
  // to this instance, to this router. Timed from here, on the worker's strand. A forwarded ask keeps
  // its asker's `from` and id: it is timed by the asker's router, not by this one.
  if (!e.ask_worker.empty() && e.in_reply_to.empty() && e.ask_instance == top_->instance() &&
      e.from == pool_.shared->addr().str())
    boost::asio::post(strand_, [self = shared_from_this(), id = e.id, pool = topic, at = clock_->now()] {
      self->asks_.sent(id, pool, at);
    });
  auto m = split_envelope(e, topic);
  top_->enqueue(std::move(topic), mode, std::move(m.props), std::move(m.payload));
}

bool router::claim_reply(const std::string& message_id) { return first_reply_.claim(message_id); }

void router::when_writable(std::function<void()> fn) { top_->when_writable(std::move(fn)); }

const std::string& router::instance() const { return top_->instance(); }

}  // namespace dde::host
