// dde-raw-amqp rpc: request-reply over plain rabbitmq-c, the baseline of DDE's ask benchmarks.
// Requesters (one connection and thread each) publish a request with reply-to and wait for its
// reply before the next, as DDE's requester worker with concurrency 1; suppliers (one connection and
// thread each) answer every request to its reply-to queue and ack it. With --persistent (the
// at-least-once baseline) requests are persistent, publisher-confirmed, and acked after the reply.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "raw_amqp.hpp"

namespace dde::raw {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

/// Answers requests until `stop`.
void supply(const options& o, const std::atomic<bool>& stop) {
  connection c(o);
  amqp_basic_qos(c.get(), channel, 0, o.prefetch, 0);
  c.rpc_ok("basic.qos");
  amqp_basic_consume(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), amqp_empty_bytes, 0, 0, 0,
                     amqp_empty_table);
  c.rpc_ok("basic.consume");
  while (!stop) {
    amqp_maybe_release_buffers(c.get());
    amqp_envelope_t e;
    timeval timeout{0, 50000};
    const auto r = amqp_consume_message(c.get(), &e, &timeout, 0);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) continue;
    check(r, "supplier consume");
    amqp_basic_properties_t props{};
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG;
    props.delivery_mode = 1;
    props.correlation_id = e.message.properties.correlation_id;
    check_status(amqp_basic_publish(c.get(), channel, amqp_empty_bytes, e.message.properties.reply_to, 0, 0,
                                    &props, e.message.body),
                 "reply publish");
    check_status(amqp_basic_ack(c.get(), channel, e.delivery_tag, 0), "basic.ack");
    amqp_destroy_envelope(&e);
  }
}

/// Asks `count` times, one request in flight; appends each round trip (µs) to `rtts`.
void request(const options& o, std::uint64_t count, std::vector<std::int64_t>& rtts) {
  connection pub(o), sub(o);
  if (o.persistent) {
    amqp_confirm_select(pub.get(), channel);
    pub.rpc_ok("confirm.select");
  }
  const auto* ok =
      amqp_queue_declare(sub.get(), channel, amqp_empty_bytes, 0, 0, /*exclusive=*/1, 1, amqp_empty_table);
  sub.rpc_ok("declare reply queue");
  const std::string reply_queue = text(ok->queue);
  amqp_basic_consume(sub.get(), channel, amqp_cstring_bytes(reply_queue.c_str()), amqp_empty_bytes, 0,
                     /*no_ack=*/1, 0, amqp_empty_table);
  sub.rpc_ok("consume replies");
  const std::string body(o.size, 'x');
  confirms window;
  for (std::uint64_t n = 0; n < count; ++n) {
    const std::string id = std::to_string(n);
    amqp_basic_properties_t props{};
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG;
    props.delivery_mode = o.persistent ? 2 : 1;
    props.reply_to = amqp_cstring_bytes(reply_queue.c_str());
    props.correlation_id = amqp_cstring_bytes(id.c_str());
    const auto sent = clock_type::now();
    check_status(amqp_basic_publish(pub.get(), channel, amqp_empty_bytes, amqp_cstring_bytes(o.queue.c_str()),
                                    0, 0, &props, amqp_bytes_t{body.size(), const_cast<char*>(body.data())}),
                 "request publish");
    for (;;) {
      amqp_maybe_release_buffers(sub.get());
      amqp_envelope_t e;
      timeval timeout{o.idle_timeout_s, 0};
      const auto r = amqp_consume_message(sub.get(), &e, &timeout, 0);
      check(r, "wait for reply");
      const bool mine = text(e.message.properties.correlation_id) == id;
      amqp_destroy_envelope(&e);
      if (mine) break;
    }
    rtts.push_back(duration_cast<microseconds>(clock_type::now() - sent).count());
    if (o.persistent) window.await(pub, n + 1, o.idle_timeout_s);
  }
}

}  // namespace

void rpc(const options& o) {
  {
    connection c(o);
    declare(c, o);
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> suppliers;
  std::mutex mutex;
  std::string failure;
  auto guarded = [&](auto fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex);
      if (failure.empty()) failure = e.what();
      stop = true;
    }
  };
  for (int i = 0; i < o.suppliers; ++i) suppliers.emplace_back([&] { guarded([&] { supply(o, stop); }); });
  const auto n = std::uint64_t(o.connections);
  std::vector<std::vector<std::int64_t>> rtts(n);
  std::vector<std::thread> requesters;
  const auto start = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i)
    requesters.emplace_back(
        [&, i] { guarded([&] { request(o, o.count / n + (i < o.count % n ? 1 : 0), rtts[i]); }); });
  for (auto& t : requesters) t.join();
  const auto end = clock_type::now();
  stop = true;
  for (auto& t : suppliers) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
  std::vector<std::int64_t> all;
  for (auto& r : rtts) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  report("rpc", all.size(), o.size, start, end,
         "p50_us=" + std::to_string(percentile(all, 0.5)) + " p90_us=" +
             std::to_string(percentile(all, 0.9)) + " p99_us=" + std::to_string(percentile(all, 0.99)) +
             " max_us=" + std::to_string(all.empty() ? 0 : all.back()));
}

}  // namespace dde::raw
