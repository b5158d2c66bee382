// Throughput and latency of dde-mqs against a real broker (not a ctest test):
//   mqs_bench [messages] [body-bytes] [prefetch] [extra dde-mqs flags...]
//   mqs_bench [messages] [body-bytes] raw-quorum   (the broker alone)
//   mqs_bench [messages] [body-bytes] leases       (what leases cost; mqs/PROTOCOL.md "Leases")
//   mqs_bench [messages] [body-bytes] delays       (delayed retry's path through a delay queue)
// Starts its own broker and dde-mqs per prefetch, prefills a topic through the MQS, then pulls it
// with a large credit, acking each received batch; compares with raw rabbitmq-c consuming.
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <numeric>
#include <sstream>

#include "dde/names.hpp"
#include "dde/net/http_client.hpp"
#include "dde_test.hpp"
#include "mqs_client.hpp"

using namespace dde::mqs::test;
using namespace std::chrono;
using dde::test::child_process;

namespace {

std::vector<std::string> extra_flags;

struct mqs_child {
  mqs_child(dde::test::rabbitmq_node& broker, int prefetch) {
    port = dde::test::free_port();
    std::vector<std::string> argv{dde::test::bin_path("dde-mqs").string(),
                                  "--port",
                                  std::to_string(port),
                                  "--broker-port",
                                  std::to_string(broker.port()),
                                  "--prefetch",
                                  std::to_string(prefetch),
                                  "--log-level",
                                  "warn"};
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    proc = std::make_unique<child_process>(argv, dde::test::fresh_dir("mqs-bench") / "dde-mqs.log");
    if (!dde::test::wait_until([&] { return dde::test::port_open(port); }, 20s))
      throw std::runtime_error(proc->log());
  }
  ~mqs_child() { proc->stop(); }
  std::uint16_t port;
  std::unique_ptr<child_process> proc;
};

dde::test::rabbitmq_node* broker_ = nullptr;

std::string topic_name(const std::string& what) { return "bench." + what + "_" + std::to_string(::getpid()); }

double prefill(mqs_client& c, const std::string& topic, const std::string& mode, int n,
               const std::string& body) {
  auto t0 = steady_clock::now();
  bool confirmed = mode == "at-least-once";
  std::atomic<std::size_t> confirms{0};
  c.on_batch([&](std::vector<dde::wire::record>& records) {
    for (auto& r : records)
      if (r.header.value("action", "") == "confirm") confirms += r.header["seqs"].size();
    records.clear();
  });
  for (int i = 0; i < n; i += 500) {
    std::string batch;
    for (int j = i; j < std::min(n, i + 500); ++j) {
      nlohmann::json h{{"action", "enqueue"}, {"topic", topic}, {"mode", mode}};
      if (confirmed) h["seq"] = j + 1;
      dde::wire::append_record(batch, h, body);
    }
    c.send(std::move(batch));
    if (confirmed) c.wait_for([&] { return confirms + 20000 >= std::size_t(i); }, 60s);
  }
  if (confirmed) c.wait_for([&] { return confirms >= std::size_t(n); }, 120s);
  c.on_batch(nullptr);
  if (!confirmed && broker_)
    dde::test::wait_until([&] { return broker_->queue_depth(topic) >= std::optional<std::uint32_t>(n); },
                          120s, 5ms);
  return n / duration<double>(steady_clock::now() - t0).count();
}

double consume(mqs_client& c, const std::string& topic, const std::string& mode, int n) {
  std::atomic<int> got{0};
  bool ack = mode == "at-least-once";
  c.on_batch([&](std::vector<dde::wire::record>& records) {
    std::vector<std::uint64_t> tags;
    for (auto& r : records)
      if (r.header.value("action", "") == "deliver") tags.push_back(r.header["tag"].get<std::uint64_t>());
    got += int(tags.size());
    if (ack && !tags.empty()) c.ack(tags);
    records.clear();
  });
  auto t0 = steady_clock::now();
  for (int credit = 0; credit < n; credit += 65535)
    c.pull(topic, mode, std::uint32_t(std::min(65535, n - credit)));
  c.wait_for([&] { return got >= n; }, 300s);
  auto rate = got / duration<double>(steady_clock::now() - t0).count();
  c.on_batch(nullptr);
  return rate;
}

// One message at a time, host -> MQS -> broker -> MQS -> host: the added latency.
void latency(mqs_client& c, const std::string& topic) {
  std::atomic<int> got{0};
  c.on_batch([&](std::vector<dde::wire::record>& records) {
    for (auto& r : records)
      if (r.header.value("action", "") == "deliver") ++got;
    records.clear();
  });
  c.pull(topic, "at-most-once", 2000);
  std::vector<double> us;
  for (int i = 0; i < 2000; ++i) {
    auto t0 = steady_clock::now();
    c.enqueue(topic, "at-most-once", std::nullopt, "ping");
    c.wait_for([&] { return got > i; }, 10s);
    us.push_back(duration<double, std::micro>(steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("latency enqueue->deliver, at-most-once, prefetch 1: median %.0f us, p99 %.0f us\n",
              us[us.size() / 2], us[us.size() * 99 / 100]);
  c.on_batch(nullptr);
}

double raw_consume(dde::test::rabbitmq_node& broker, const std::string& queue, int n, int prefetch) {
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  amqp_socket_open(socket, "127.0.0.1", broker.port());
  amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest");
  amqp_channel_open(conn, 1);
  amqp_basic_qos(conn, 1, 0, std::uint16_t(prefetch), 0);
  amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue.c_str()), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
  auto t0 = steady_clock::now();
  for (int i = 0; i < n; ++i) {
    amqp_envelope_t env;
    amqp_maybe_release_buffers(conn);
    auto r = amqp_consume_message(conn, &env, nullptr, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) break;
    amqp_basic_ack(conn, 1, env.delivery_tag, 0);
    amqp_destroy_envelope(&env);
  }
  double rate = n / duration<double>(steady_clock::now() - t0).count();
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return rate;
}

/// dde_mqs_leases_renewed_total of `topic` on the MQS at `port`.
double renewals(std::uint16_t port, const std::string& topic) {
  auto r = dde::net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  auto key = "dde_mqs_leases_renewed_total{pool=\"" + topic + "\"} ";
  auto at = r.body.find(key);
  return at == std::string::npos ? 0 : std::atof(r.body.c_str() + at + key.size());
}

/// CPU seconds (user + system) process `pid` used so far.
double cpu_seconds(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

/// Raw rabbitmq-c publishing 20,000 messages of `size` bytes with confirms (window 1000) to a quorum
/// queue on `broker`: its rate, as dde-raw-amqp prints it.
std::string raw_confirmed(dde::test::rabbitmq_node& broker, std::size_t size) {
  auto queue = topic_name("rawconfirm");
  auto raw = dde::test::bin_path("dde-raw-amqp").string() + " produce --port " +
             std::to_string(broker.port()) + " --queue " + queue +
             " --queue-type quorum --persistent --confirm-window 1000 --count 20000 --size " +
             std::to_string(size);
  std::string line;
  if (auto* p = ::popen(raw.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) line += buf;
    ::pclose(p);
  }
  broker.delete_queue(queue);
  auto at = line.find("rate=");
  return at == std::string::npos ? "?" : line.substr(at + 5, line.find(' ', at) - at - 5);
}

/// What leases cost (mqs/PROTOCOL.md "Leases"): at-least-once consumption with leases off and on
/// (on, the MQS keeps each body until the host acks), and the renewals of `held` messages that
/// a host keeps, next to raw rabbitmq-c's confirmed publishing on the same broker (each renewal is
/// a confirmed publish, a delivery and an ack).
int lease_bench(dde::test::rabbitmq_node& broker, int n, const std::string& body) {
  std::vector<double> off, on;
  for (int round = 0; round < 3; ++round)
    for (auto lease : {"0", "600000"}) {
      extra_flags = {"--lease-ms", lease};
      mqs_child mqs(broker, 64);
      mqs_client c(mqs.port);
      c.hello("bench");
      auto topic = topic_name(std::string("lease") + lease + "_" + std::to_string(round));
      prefill(c, topic, "at-least-once", n, body);
      (std::string(lease) == "0" ? off : on).push_back(consume(c, topic, "at-least-once", n));
      broker.delete_queue(topic);
      broker.delete_queue("dde.dead." + topic);
    }
  std::sort(off.begin(), off.end());
  std::sort(on.begin(), on.end());
  std::printf(
      "at-least-once consume, prefetch 64, median of 3: leases off %7.0f msg/s, leases on (none due) %7.0f "
      "msg/s (%.2f)\n",
      off[1], on[1], on[1] / off[1]);

  const int held = std::min(n, 2000);
  extra_flags = {"--lease-ms", "200"};
  mqs_child mqs(broker, held);
  mqs_client c(mqs.port);
  c.hello("bench");
  auto topic = topic_name("renewed");
  prefill(c, topic, "at-least-once", held, body);
  std::vector<std::uint64_t> tags;
  std::mutex m;
  c.on_batch([&](std::vector<dde::wire::record>& records) {
    std::lock_guard lock(m);
    for (auto& r : records)
      if (r.header.value("action", "") == "deliver") tags.push_back(r.header["tag"].get<std::uint64_t>());
    records.clear();
  });
  c.pull(topic, "at-least-once", std::uint32_t(held));
  c.wait_for(
      [&] {
        std::lock_guard lock(m);
        return tags.size() >= std::size_t(held);
      },
      60s);
  // From the end of the first round of renewals, over five more.
  dde::test::wait_until([&] { return renewals(mqs.port, topic) >= held; }, 60s, 5ms);
  auto t1 = steady_clock::now();
  double r1 = renewals(mqs.port, topic), cpu1 = cpu_seconds(mqs.proc->pid());
  dde::test::wait_until([&] { return renewals(mqs.port, topic) >= r1 + 5 * held; }, 120s, 5ms);
  auto t2 = steady_clock::now();
  double r2 = renewals(mqs.port, topic), cpu2 = cpu_seconds(mqs.proc->pid());
  {
    std::lock_guard lock(m);
    c.ack(tags);
  }
  dde::test::wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(0); }, 60s);
  c.close();
  double rate = (r2 - r1) / duration<double>(t2 - t1).count();
  std::printf(
      "lease renewals, %d messages held, --lease-ms 200: %7.0f renewals/s, dde-mqs CPU %.0f us per renewal\n",
      held, rate, (cpu2 - cpu1) * 1e6 / std::max(1.0, r2 - r1));

  std::printf("raw rabbitmq-c confirmed publish, quorum queue, window 1000: %s msg/s\n",
              raw_confirmed(broker, body.size()).c_str());
  return 0;
}

amqp_table_entry_t text_entry(const char* key, const std::string& value) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = amqp_cstring_bytes(value.c_str());
  return e;
}

/// The same path without DDE: rabbitmq-c declares a quorum delay queue as the MQS does (TTL,
/// at-least-once dead-lettering to `target`), publishes `n` messages to it with confirms (batches
/// of 500) and the broker counts them back in `target`; messages per second from the first publish
/// to the last arrival, less the delay.
double raw_delay(dde::test::rabbitmq_node& broker, int n, std::size_t size, int delay_ms) {
  auto target = topic_name("rawdelayed");
  auto queue = dde::delay_topic(target, delay_ms);
  broker.declare_queue(target, true);
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  amqp_socket_open(socket, "127.0.0.1", broker.port());
  amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest");
  amqp_channel_open(conn, 1);
  std::vector<amqp_table_entry_t> args{
      text_entry("x-queue-type", "quorum"), text_entry("x-dead-letter-exchange", ""),
      text_entry("x-dead-letter-routing-key", target), text_entry("x-dead-letter-strategy", "at-least-once"),
      text_entry("x-overflow", "reject-publish")};
  amqp_table_entry_t ttl;
  ttl.key = amqp_cstring_bytes("x-message-ttl");
  ttl.value.kind = AMQP_FIELD_KIND_I64;
  ttl.value.value.i64 = delay_ms;
  args.push_back(ttl);
  amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue.c_str()), 0, 1, 0, 0,
                     amqp_table_t{int(args.size()), args.data()});
  amqp_confirm_select(conn, 1);
  std::string body(size, 'x');
  amqp_basic_properties_t props;
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = 2;
  auto t0 = steady_clock::now();
  std::uint64_t published = 0, confirmed = 0;
  while (confirmed < std::uint64_t(n)) {
    while (published < std::uint64_t(n) && published < confirmed + 1000) {
      amqp_basic_publish(conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 0, 0, &props,
                         amqp_bytes_t{body.size(), body.data()});
      ++published;
    }
    amqp_frame_t frame;
    if (amqp_simple_wait_frame(conn, &frame) != AMQP_STATUS_OK) break;
    if (frame.frame_type == AMQP_FRAME_METHOD && frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
      auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
      confirmed = std::max<std::uint64_t>(confirmed, ack->multiple ? ack->delivery_tag : confirmed + 1);
    }
  }
  dde::test::wait_until([&] { return broker.queue_depth(target) >= std::optional<std::uint32_t>(n); }, 300s,
                        5ms);
  double rate = n / (duration<double>(steady_clock::now() - t0).count() - delay_ms / 1000.0);
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  broker.delete_queue(queue);
  broker.delete_queue(target);
  return rate;
}

/// Delayed retry's path (a pool's `retry.delays`, a worker's send_after): `n` messages enqueued
/// through the MQS to `dde.delay-<ms>.<topic>` come back to `topic` after <ms>; how late, and how
/// many per second, next to raw rabbitmq-c's confirmed publishing on the same broker.
int delay_bench(dde::test::rabbitmq_node& broker, int n, std::size_t size) {
  constexpr int delay_ms = 1000;
  mqs_child mqs(broker, 64);
  mqs_client c(mqs.port);
  c.hello("bench");
  auto topic = topic_name("delayed");
  auto delay_topic = dde::delay_topic(topic, delay_ms);
  std::mutex m;
  std::vector<double> late_ms;
  auto origin = steady_clock::now();
  auto now_us = [&] { return duration_cast<microseconds>(steady_clock::now() - origin).count(); };
  std::atomic<std::size_t> confirms{0};
  c.on_batch([&](std::vector<dde::wire::record>& records) {
    std::vector<std::uint64_t> tags;
    auto at = now_us();
    std::lock_guard lock(m);
    for (auto& r : records) {
      auto action = r.header.value("action", "");
      if (action == "confirm") confirms += r.header["seqs"].size();
      if (action != "deliver") continue;
      tags.push_back(r.header["tag"].get<std::uint64_t>());
      late_ms.push_back((at - std::atoll(r.body.c_str())) / 1000.0 - delay_ms);
    }
    if (!tags.empty()) c.ack(tags);
    records.clear();
  });
  c.pull(topic, "at-least-once", std::uint32_t(std::min(n, 65535)));
  auto t0 = steady_clock::now();
  for (int i = 0; i < n; i += 500) {
    std::string batch;
    for (int j = i; j < std::min(n, i + 500); ++j) {
      auto body = std::to_string(now_us());
      body.resize(std::max(size, body.size() + 1), ' ');
      dde::wire::append_record(
          batch, {{"action", "enqueue"}, {"topic", delay_topic}, {"mode", "at-least-once"}, {"seq", j + 1}},
          body);
    }
    c.send(std::move(batch));
    c.wait_for([&] { return confirms + 20000 >= std::size_t(i); }, 60s);
  }
  c.wait_for(
      [&] {
        std::lock_guard lock(m);
        return late_ms.size() >= std::size_t(n);
      },
      300s);
  double seconds = duration<double>(steady_clock::now() - t0).count() - delay_ms / 1000.0;
  std::lock_guard lock(m);
  std::sort(late_ms.begin(), late_ms.end());
  if (late_ms.size() < std::size_t(n)) std::printf("only %zu of %d came back\n", late_ms.size(), n);
  if (late_ms.empty()) return 1;
  std::printf(
      "delayed retry path, %d messages through a %d ms delay queue: %7.0f msg/s; late by p50 %.1f ms, "
      "p99 %.1f ms, max %.1f ms\n",
      n, delay_ms, late_ms.size() / seconds, late_ms[late_ms.size() / 2], late_ms[late_ms.size() * 99 / 100],
      late_ms.back());
  std::printf("raw rabbitmq-c through the same kind of delay queue:                %7.0f msg/s\n",
              raw_delay(broker, n, size, delay_ms));
  std::printf("raw rabbitmq-c confirmed publish, quorum queue, window 1000: %s msg/s\n",
              raw_confirmed(broker, size).c_str());
  broker.delete_queue(topic);
  broker.delete_queue(delay_topic);
  broker.delete_queue("dde.dead." + topic);
  return late_ms.size() == std::size_t(n) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  std::string body(argc > 2 ? std::atoi(argv[2]) : 64, 'x');
  dde::test::rabbitmq_node broker("mqs-bench");
  broker.start();
  broker_ = &broker;
  std::printf("%d messages of %zu bytes\n", n, body.size());
  if (argc > 3 && std::string(argv[3]) == "leases") {
    int status = lease_bench(broker, n, body);
    broker.stop();
    return status;
  }
  if (argc > 3 && std::string(argv[3]) == "delays") {
    int status = delay_bench(broker, n, body.size());
    broker.stop();
    return status;
  }
  if (argc > 3 && std::string(argv[3]) == "raw-quorum") {
    // The broker alone: a quorum queue (as at-least-once topics are) consumed by rabbitmq-c.
    for (int prefetch : {1, 8, 64}) {
      mqs_child mqs(broker, 1);
      auto topic = topic_name("rawq" + std::to_string(prefetch));
      int count = prefetch == 1 ? std::min(n, 5000) : n;
      {
        mqs_client c(mqs.port);
        c.hello("bench");
        prefill(c, topic, "at-least-once", count, body);
        c.close();
      }
      std::printf("raw rabbitmq-c consume, quorum queue, prefetch %2d, ack each: %7.0f msg/s\n", prefetch,
                  raw_consume(broker, topic, count, prefetch));
      std::fflush(stdout);
      broker.delete_queue(topic);
      broker.delete_queue("dde.dead." + topic);
    }
    broker.stop();
    return 0;
  }
  std::vector<int> prefetches{1, 8, 64};
  if (argc > 3) prefetches = {std::atoi(argv[3])};
  for (int i = 4; i < argc; ++i) extra_flags.push_back(argv[i]);
  for (int prefetch : prefetches) {
    mqs_child mqs(broker, prefetch);
    mqs_client c(mqs.port);
    c.hello("bench");
    for (std::string mode : {"at-most-once", "at-least-once"}) {
      int count = prefetch == 1 ? std::min(n, 20000) : n;
      auto topic = topic_name(mode.substr(0, 8) + std::to_string(prefetch));
      double in = prefill(c, topic, mode, count, body);
      double out = consume(c, topic, mode, count);
      std::printf("prefetch %2d %-13s enqueue %7.0f msg/s   dequeue %7.0f msg/s\n", prefetch, mode.c_str(),
                  in, out);
      std::fflush(stdout);
      broker.delete_queue(topic);
      broker.delete_queue("dde.dead." + topic);
    }
    if (prefetch == 1) latency(c, topic_name("latency"));
    if (prefetch == 64) {
      auto topic = topic_name("raw");
      prefill(c, topic, "at-most-once", n, body);
      dde::test::wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(n); },
                            120s);
      c.close();
      std::printf("raw rabbitmq-c consume, prefetch 64, ack each: %7.0f msg/s\n",
                  raw_consume(broker, topic, n, 64));
      broker.delete_queue(topic);
    }
  }
  broker.stop();
}
