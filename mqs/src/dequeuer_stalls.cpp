// The dequeuer's side of the delivery watchdog (dde/core/stall_watch.hpp): which topics wait on a
// quiet consumer, the broker asked about their queues off the loop, and a stalled topic consumed
// afresh.
#include "dde/log.hpp"
#include "dequeuer.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {

void dequeuer::check_stalls(clock::time_point now) {
  std::vector<stall_watch::consumed> topics;
  for (auto& [topic, c] : consumers_) {
    auto* ch = c.link.usable() && c.link.channel ? channel_of(c.link) : nullptr;
    if (!ch) continue;
    // The broker sends nothing to consumers whose prefetch is all unacknowledged (a long job): that
    // is no stall.
    const bool room = ch->acks.outstanding() < std::size_t(cfg_.prefetch) * (1 + ch->more_tags.size());
    topics.push_back({topic, ch->last_traffic, room && dispatcher_.starved(topic)});
  }
  auto ask = stalls_.sweep(now, topics);
  if (ask.empty()) return;
  // On a connection of its own, from the node after the first suspect's (the node it is on may be
  // what stopped answering); a topic not answered counts as an idle one, asked again a limit later.
  auto params = main_.params;
  params.connection_name += " depths";
  auto& first = consumers_.at(ask.front());
  if (!params.nodes.empty() && first.link.session)
    params.first_node = next_node(first.link.session->node_index(), params.nodes.size());
  loop_.opener.run([this, params = std::move(params), ask = std::move(ask)] {
    std::string error;
    auto session = env_.open(params, error);
    constexpr std::uint16_t channel = 1;
    if (session && !session->open_channel(channel).ok()) session.reset();
    std::vector<dequeue_command> answers;
    answers.reserve(ask.size());
    for (auto& topic : ask) {
      dequeue::depth a{topic, 0};
      std::uint32_t messages = 0, consumers = 0;
      if (session && session->queue_depth(channel, topic, messages, consumers).ok()) a.ready = messages;
      answers.emplace_back(std::move(a));
    }
    submit(std::move(answers));
  });
}

void dequeuer::handle(dequeue::depth& answer, clock::time_point now) {
  auto it = consumers_.find(answer.topic);
  if (it == consumers_.end()) return;
  auto& c = it->second;
  auto* ch = c.link.usable() && c.link.channel ? channel_of(c.link) : nullptr;
  if (!ch || !stalls_.answer(answer.topic, answer.ready, ch->last_traffic, now)) return;
  auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - ch->last_traffic).count();
  logger("mqs.dequeuer")
      ->warn(
          "consumer of {} got nothing for {} ms while its hosts hold credit and {} messages are ready "
          "(its connection to {} may be frozen): consuming it on a fresh connection",
          answer.topic, quiet, answer.ready, c.link.session->node());
  mqs_metrics::process().topic(answer.topic).stalls.add();
  c.link.fail("stalled for " + std::to_string(quiet) + " ms");
}

}  // namespace dde::mqs
