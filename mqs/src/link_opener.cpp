#include "link_opener.hpp"

#include <poll.h>

namespace dde::mqs {

std::shared_ptr<link_plan> plan_link(const std::string& topic, const link_shape& shape, std::uint64_t epoch,
                                     bool first, const broker_params& params) {
  auto plan = std::make_shared<link_plan>();
  plan->topic = topic;
  plan->mode = shape.mode;
  plan->epoch = epoch;
  plan->tag = "dde-mqs." + topic + "." + std::to_string(epoch);
  plan->first = first;
  plan->params = params;
  plan->params.connection_name += " " + topic;
  // Topics start at different nodes of a cluster; a link that was lost starts at the node after its last.
  if (!plan->params.nodes.empty())
    plan->params.first_node =
        shape.first_node.value_or(std::hash<std::string>{}(topic) % plan->params.nodes.size());
  if (auto dl = dead_letter_spec_for(topic, shape.mode, shape.quorum)) plan->specs.push_back(*dl);
  plan->specs.push_back(spec_for(topic, shape.mode, shape.quorum));
  // A partitioned topic: its partitions' queues, one consumer each, then its own queue (what an MQS
  // that did not know the topic was partitioned published there), partitioned as it comes.
  for (std::uint32_t p = 0; p < shape.partitions; ++p) {
    plan->specs.push_back(partition_spec(topic, p, shape.mode, shape.quorum));
    plan->queues.push_back(plan->specs.back().name);
  }
  if (shape.partitions) plan->queues.push_back(topic);
  // No lease copies for a partitioned topic: they would come back to the topic's queue, not the partition's.
  if (shape.lease_ms > 0 && shape.mode == delivery_mode::at_least_once && !shape.partitions)
    plan->lease_queue = spec_for(lease_topic(shape.mqs_id, shape.lease_ms, topic), shape.mode, shape.quorum);
  plan->prefetch = shape.prefetch;
  return plan;
}

void link_plan::open(const session_opener& open, std::atomic<int>& watch) {
  session = open(params, failed);
  if (!session) {
    if (failed.empty()) failed = "cannot connect";
    return;
  }
  watch = session->fd();
  auto& s = *session;
  auto r = s.open_channel(topic_channel);
  for (auto& spec : specs) {
    if (!r.ok()) break;
    bool was_there = false;
    r = s.declare_or_use(topic_channel, spec, was_there);
    if (r.ok() && was_there) existing.push_back(spec.name);
  }
  if (r.ok()) r = s.qos(topic_channel, prefetch);
  // RabbitMQ 3.10 may answer this with a connection-level 541 while a fresh quorum queue elects
  // its leader: only this topic's connection goes, and it is retried after a backoff.
  if (queues.empty()) {
    if (r.ok()) r = s.consume(topic_channel, topic, tag);
  } else {
    for (std::size_t i = 0; i < queues.size() && r.ok(); ++i)
      r = s.consume(topic_channel, queues[i], i == 0 ? tag : tag + "+" + std::to_string(i));
  }
  if (r.ok() && lease_queue) {
    bool was_there = false;
    r = s.declare_or_use(topic_channel, *lease_queue, was_there);
    // basic.qos (global=false) applies to the consumers created after it: none for the lease
    // queue's (every copy is held, none waits to expire), the topic's prefetch again for those
    // that follow.
    if (r.ok()) r = s.qos(topic_channel, 0);
    if (r.ok()) r = s.consume(topic_channel, lease_queue->name, tag + "+" + std::string(lease_suffix));
    if (r.ok()) r = s.qos(topic_channel, prefetch);
  }
  watch = -1;
  if (r.connection_lost()) {
    failed = r.error;
  } else if (!r.ok()) {
    session.reset();  // closes the connection (and the channel, if the broker left it open)
    error = "cannot consume " + topic + ": " + r.error;
  }
}

amqp_session::result cancel_and_close(amqp_session& s, std::uint16_t channel,
                                      const std::vector<std::string>& tags) {
  amqp_session::result r;
  for (auto& tag : tags)
    if (r.ok()) r = s.cancel(topic_channel, tag);
  if (r.ok()) r = s.close_channel(channel);
  return r;
}

void link_opener::start() {
  if (run_) return;  // a test runs the jobs where it likes
  run_ = [this](std::function<void()> job) {
    std::vector<std::function<void()>> batch;
    batch.push_back(std::move(job));
    jobs_.push(std::move(batch));
  };
  thread_.start("mqs-opener", [this] { loop(); });
}

bool link_opener::stop() {
  return thread_.stop([this] { jobs_.wake(); });
}

void link_opener::loop() {
  while (!thread_.stopping) {
    pollfd fd{jobs_.fd(), POLLIN, 0};
    ::poll(&fd, 1, -1);
    for (auto& job : jobs_.take())
      if (!thread_.stopping) job();  // else dropped: its plan, unopened, goes with it
  }
  thread_.exited.set();
}

void link_opener::run(std::function<void()> job) {
  if (run_)
    run_(std::move(job));
  else
    job();
}

void link_opener::open(std::shared_ptr<link_plan> plan, const session_opener& open) {
  run([this, plan = std::move(plan), open]() mutable {
    plan->open(open, thread_.socket_fd);
    opened_.push({std::move(plan)});  // the loop's alone from here
  });
}

void link_opener::retire(std::unique_ptr<amqp_session> session, std::uint16_t channel,
                         std::vector<std::string> tags) {
  // std::function wants a copyable job: the session rides in a shared_ptr.
  auto held = std::make_shared<std::unique_ptr<amqp_session>>(std::move(session));
  run([held, channel, tags = std::move(tags), &watch = thread_.socket_fd] {
    auto& s = **held;
    watch = s.fd();
    if (cancel_and_close(s, channel, tags).connection_lost()) s.mark_broken();
    held->reset();  // connection.close: what the broker sent it goes back to the queue
    watch = -1;
  });
}

}  // namespace dde::mqs
