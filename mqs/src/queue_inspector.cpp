#include "queue_inspector.hpp"

#include "amqp_session.hpp"
#include "dde/core/daemon.hpp"
#include "dde/log.hpp"

namespace dde::mqs {
namespace {
constexpr std::uint16_t channel = 1;
}  // namespace

queue_inspector::queue_inspector(const config& cfg) : cfg_(cfg), thread_([this] { run(); }) {}

queue_inspector::~queue_inspector() { stop(); }

void queue_inspector::ask(std::vector<std::string> queues, std::function<void(depth_report)> done) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      questions_.push_back({std::move(queues), std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(depth_report{{}, "the MQS is stopping"});
}

void queue_inspector::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void queue_inspector::run() {
  dde::name_this_thread("mqs-inspector");
  for (;;) {
    std::vector<question> batch;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !questions_.empty(); });
      batch.swap(questions_);
      if (stopping_) {
        for (auto& q : batch) q.done(depth_report{{}, "the MQS is stopping"});
        break;
      }
    }
    for (auto& q : batch) q.done(answer(q.queues));
  }
  session_.reset();
}

depth_report queue_inspector::answer(const std::vector<std::string>& queues) {
  depth_report report;
  // One retry: a connection idle since the last question may have been closed by the broker.
  for (int attempt = 0; attempt < 2; ++attempt) {
    report = {};
    if (!session_) {
      auto params = broker_params_for(cfg_, "dde-mqs inspector", 0);
      params.first_node = first_node_;
      std::string error;
      session_ = amqp_session::open(params, error);
      if (session_) {
        if (auto r = session_->open_channel(channel); !r.ok()) {
          error = r.error;
          session_.reset();
        }
      }
      if (!session_) {
        report.error = error;
        return report;
      }
    }
    bool lost = false;
    for (auto& name : queues) {
      std::uint32_t messages = 0, consumers = 0;
      auto r = session_->queue_depth(channel, name, messages, consumers);
      if (r.ok()) {
        report.queues[name] = {messages, consumers};
        continue;
      }
      if (r.channel_closed) {  // 404: no such queue; the channel is closed, open it again
        if (session_->open_channel(channel).ok()) continue;
      }
      report.error = r.error;
      lost = true;
      break;
    }
    if (!lost) return report;
    // A cluster's next node first: the one this connection was on may be down or frozen.
    first_node_ = next_node(session_->node_index(), cfg_.brokers.size());
    session_->mark_broken();
    session_.reset();
  }
  logger("mqs")->debug("queue depths unavailable: {}", report.error);
  return report;
}

}  // namespace dde::mqs
