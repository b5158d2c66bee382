// Backbone benchmark: DDE end-to-end production and consumption (64-byte messages, prefetch 1, 8,
// 64, both delivery modes) next to raw rabbitmq-c on the same throw-away broker, in one run.
//
// Production is measured at the broker: from the producer worker's start until the queue holds
// every message. Consumption: from the first to the last message the consumer worker handled,
// reading a queue that was filled beforehand. The raw baseline (dde-raw-amqp) does the same with
// the same queue kind, message size and prefetch.
#include <cstdio>
#include <iostream>

#include "bench_cli.hpp"
#include "suite/bench_cluster.hpp"

namespace {

using namespace dde::test;

struct point {
  std::string mode;
  int prefetch;
  double dde_produce = 0, raw_produce = 0, dde_consume = 0, raw_consume = 0;
};

double raw(rabbitmq_node& broker, const std::string& queue, const std::string& mode, int prefetch, long n,
           double& consume_rate) {
  std::vector<std::string> common{"--queue", queue, "--count", std::to_string(n)};
  for (auto& a : dde::bench::raw_mode_args(mode)) common.push_back(a);
  auto produce = common, consume = common;
  produce.insert(produce.begin(), "produce");
  produce.insert(produce.end(), {"--size", "64"});
  consume.insert(consume.begin(), "consume");
  consume.insert(consume.end(), {"--prefetch", std::to_string(prefetch)});
  double produce_rate = dde::bench::run_raw(broker, produce)["rate"];
  consume_rate = dde::bench::run_raw(broker, consume)["rate"];
  broker.delete_queue(queue);
  return produce_rate;
}

void dde_point(rabbitmq_node& broker, point& p, long n) {
  auto dir = fresh_dir("bench-" + p.mode + "-" + std::to_string(p.prefetch));
  auto mqs = start_mqs(broker, dir, p.prefetch);
  std::string sys = "bench" + std::to_string(::getpid()) + (p.mode == "at-least-once" ? "alo" : "amo") +
                    std::to_string(p.prefetch);
  std::string queue = sys + ".consumer";
  // Production, measured at the broker.
  auto producer = start_host(
      sys, mqs.url(),
      {pool(sys, "producer", "producer",
            {{"to", sys + "/consumer"}, {"count", n}, {"size", 64}, {"stats_dir", dir.string()}}, 1, p.mode)},
      dir / "host-producer.log");
  if (!wait_until([&] { return broker.queue_depth(queue).value_or(0) >= n; }, 600s, 5ms))
    throw std::runtime_error("production did not finish:\n" + producer->log());
  auto filled_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  wait_until([&] { return !all_stats(dir, "producer-").empty(); }, 10s);
  auto started_us = all_stats(dir, "producer-").at(0).value("first_us", std::int64_t(0));
  p.dde_produce = double(n) / (double(filled_us - started_us) / 1e6);
  producer->stop();
  // Consumption of the filled queue.
  auto consumer_pool = pool(sys, "consumer", "consumer", {{"stats_dir", dir.string()}}, 1, p.mode);
  consumer_pool["credits"] = std::max(8, p.prefetch);
  auto consumer = start_host(sys, mqs.url(), {consumer_pool}, dir / "host-consumer.log");
  if (!wait_until([&] { return sum_stats(dir, "consumer-").value("received", 0) >= n; }, 600s, 50ms))
    throw std::runtime_error("consumption did not finish:\n" + consumer->log());
  auto stats = sum_stats(dir, "consumer-");
  double seconds = double(stats["last_us"].get<std::int64_t>() - stats["first_us"].get<std::int64_t>()) / 1e6;
  p.dde_consume = double(n - 1) / seconds;
  consumer->stop();
  broker.delete_queue(queue);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  if (auto code = dde::bench::bench_command_line(
          argc, argv, "dde-bench-backbone",
          "DDE end to end next to raw rabbitmq-c on one throw-away broker (see the manual's Benchmarks).",
          quick))
    return *code;
  long n_fast = quick ? 20000 : 100000;
  long n_slow = quick ? 2000 : 10000;
  rabbitmq_node broker("bench");
  broker.start();
  std::vector<point> points;
  for (std::string mode : {"at-most-once", "at-least-once"})
    for (int prefetch : {1, 8, 64}) points.push_back({mode, prefetch});
  std::cout
      << "DDE backbone benchmark: 64-byte messages, one producer then one consumer, broker on this machine\n";
  for (auto& p : points) {
    long n = p.prefetch == 1 ? n_slow : n_fast;
    std::cerr << "[bench] " << p.mode << " prefetch " << p.prefetch << " (" << n << " messages)...\n";
    dde_point(broker, p, n);
    p.raw_produce =
        raw(broker, "rawbench" + std::to_string(::getpid()), p.mode, p.prefetch, n, p.raw_consume);
  }
  std::printf(
      "\n| mode | prefetch | DDE produce msg/s | raw produce msg/s | ratio | DDE consume msg/s | raw consume "
      "msg/s | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (auto& p : points)
    std::printf("| %s | %d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n", p.mode.c_str(), p.prefetch,
                p.dde_produce, p.raw_produce, p.raw_produce > 0 ? p.dde_produce / p.raw_produce : 0,
                p.dde_consume, p.raw_consume, p.raw_consume > 0 ? p.dde_consume / p.raw_consume : 0);
  broker.stop();
  return 0;
}
