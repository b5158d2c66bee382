#include "measure.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

#include "mqs_stats_client.hpp"

namespace dde::bench {
namespace fs = std::filesystem;
using namespace test;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

constexpr auto point_timeout = 300s;

/// Spreads `workers` over min(workers, nodes) pools; calls fn(node, workers_on_it).
template <class F>
int spread(int workers, int nodes, F fn) {
  const int used = std::max(1, std::min(workers, nodes));
  for (int j = 0; j < used; ++j) fn(j, workers / used + (j < workers % used ? 1 : 0));
  return used;
}

std::string unique_queue() {
  static std::atomic<int> n{0};
  return "rawbench" + std::to_string(::getpid()) + "x" + std::to_string(n++);
}

}  // namespace

void release_together(const fs::path& go, const fs::path& stats_dir, const std::string& prefix,
                      const std::string& field, long n) {
  wait_until([&] { return read_span(stats_dir, prefix, field).total >= n; }, 3s, 2ms);
  std::ofstream{go};
}

production produce(cluster_api& c, const setup& s, long n, int producers, int size, bool at_broker,
                   const std::function<void()>& started) {
  const std::string psys = s.system + "p", queue = s.system + ".consumer";
  const long count = n / producers;  // every worker of a pool gets the same args
  const long assigned = count * producers;
  // Deployed node after node, the producers wait for one file and start together, as the raw
  // client's threads do (each timed from its own start, the first would run alone for the time it
  // takes to deploy the others).
  const auto go = s.stats_dir / "producers.go";
  const int used = spread(producers, c.nodes(), [&](int node, int workers) {
    c.deploy(node, s.mqs[std::size_t(node) % s.mqs.size()],
             {psys,
              "producer",
              "producer",
              {{"to", s.system + "/consumer"},
               {"count", count},
               {"size", size},
               {"stats_dir", s.stats_dir},
               {"start_file", go.string()}},
              workers,
              s.mode,
              8});
  });
  if (started) started();
  release_together(go, s.stats_dir, "producer-", "ready", producers);
  production p;
  bool ok =
      at_broker
          ? wait_until([&] { return c.queue_depth(queue) >= std::uint32_t(assigned); }, point_timeout, 5ms)
          : wait_until(
                [&] {
                  return read_span(s.stats_dir, "producer-", "sent").finished >= std::size_t(producers);
                },
                point_timeout, 10ms);
  const auto reached_us = now_us();
  wait_until([&] { return read_span(s.stats_dir, "producer-", "sent").finished >= std::size_t(producers); },
             30s);
  auto span = read_span(s.stats_dir, "producer-", "sent");
  if (ok) {
    p.at_isolates = rate(double(span.total), span.first_us, span.last_us);
    if (at_broker) {
      p.at_broker = rate(double(assigned), span.first_us, reached_us);
      p.filled_us = reached_us;
    }
  } else {
    std::cerr << "[bench] production did not finish (" << span.total << " of " << assigned << " sent)\n";
  }
  for (int j = 0; j < used; ++j) c.shutdown(j, psys);
  return p;
}

int deploy_consumers(cluster_api& c, const setup& s, int consumers, int credits, const nlohmann::json& args) {
  return spread(consumers, c.nodes(), [&](int node, int workers) {
    c.deploy(node, s.mqs[std::size_t(node) % s.mqs.size()],
             {s.system, "consumer", "consumer", args, workers, s.mode, credits});
  });
}

int start_consumers(cluster_api& c, const setup& s, int consumers, int credits) {
  return deploy_consumers(c, s, consumers, credits, {{"stats_dir", s.stats_dir}});
}

int start_consumers_together(cluster_api& c, const setup& s, int consumers, int credits,
                             std::int64_t not_before_us) {
  const auto go = s.stats_dir / "consumers.go";
  const int used =
      deploy_consumers(c, s, consumers, credits, {{"stats_dir", s.stats_dir}, {"start_file", go.string()}});
  // Not every worker need get one: at prefetch 1 (at-least-once) the first hosts to pull may hold
  // every message in flight between them. Then they start 3 s after the last deploy.
  if (auto early = not_before_us - now_us(); early > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(early));  // the queue's state under test
  release_together(go, s.stats_dir, "consumer-", "holding", consumers);
  return used;
}

double await_consumed(cluster_api& c, const setup& s, long n) {
  auto received = [&] { return read_span(s.stats_dir, "consumer-", "received").total; };
  if (!await_change(
          s.stats_dir, [&] { return received() >= n; }, point_timeout)) {
    std::cerr << "[bench] consumption did not finish (" << received() << " of " << n << ")\n";
    explain_stall(c, s);
    return 0;
  }
  auto span = read_span(s.stats_dir, "consumer-", "received");
  return rate(double(span.total - 1), span.first_us, span.last_us);
}

double consumed_steady(const setup& s) {
  auto span = read_span(s.stats_dir, "consumer-", "received");
  auto first_second = read_span(s.stats_dir, "consumer-", "first_second").total;
  return steady_rate(double(span.total), double(first_second), span.first_us, span.last_us);
}

long payload_bytes(cluster_api& c, const std::string& queue) {
  auto peeked = run_raw(c.broker_port(), {"peek", "--queue", queue});
  return peeked.count("size") ? long(peeked["size"]) : -1;
}

void stop_systems(cluster_api& c, const std::string& system, int nodes, const std::string& queue) {
  for (int j = 0; j < nodes; ++j) c.shutdown(j, system);
  if (!queue.empty()) c.delete_queue(queue);
}

request_reply ask(cluster_api& c, const setup& s, int requesters, int suppliers, long asks) {
  c.deploy(0, s.mqs.front(), {s.system, "supplier", "supplier", {}, suppliers, s.mode, 8});
  const std::string rsys = s.system + "r";
  // The requesters are one pool in one isolate system on the next node, as the raw client's are
  // threads of one process: spread over the four nodes, all on this one machine, they were four
  // processes sharing the same two cores, which a cluster of machines would not.
  // Each asks once unrecorded (its path set up, as raw's is before its clock starts), then they all
  // start together once the last is up (as raw's threads do).
  const auto go = s.stats_dir / "requesters.go";
  const int node = c.nodes() > 1 ? 1 : 0;
  c.deploy(node, s.mqs[std::size_t(node) % s.mqs.size()],
           {rsys,
            "requester",
            "requester",
            {{"to", s.system + "/supplier"},
             {"count", asks},
             {"stats_dir", s.stats_dir},
             {"rtt_log", true},
             {"timeout_ms", 5000},
             {"start_file", go.string()},
             {"warmup", 1}},
            requesters,
            s.mode,
            8});
  if (!wait_until([&] { return read_span(s.stats_dir, "requester-", "warmed").total >= requesters; },
                  point_timeout, 5ms))
    std::cerr << "[bench] not every requester's warm-up ask was answered: starting anyway\n";
  std::ofstream{go};
  request_reply r;
  // Each requester writes its .rtt once done, after its last stats.
  if (await_change(
          s.stats_dir, [&] { return count_files(s.stats_dir, ".rtt") >= std::size_t(requesters); },
          point_timeout) &&
      wait_until(
          [&] { return read_span(s.stats_dir, "requester-", "replied").finished >= std::size_t(requesters); },
          10s, 20ms)) {
    auto span = read_span(s.stats_dir, "requester-", "replied");
    r.rate = rate(double(span.total), span.first_us, span.last_us);
    r.lost = long(read_span(s.stats_dir, "requester-", "lost").total);
    if (r.lost > 0) {
      // A reply given up after 5 s may still come (counted `late`): a stall, not a loss.
      auto late = [&] { return long(read_span(s.stats_dir, "requester-", "late").total); };
      wait_until([&] { return late() >= r.lost; }, 10s, 100ms);
      r.late = late();
      // For the post-mortem: what every node's pools counted (replies, repliesDropped, ...).
      auto file = s.stats_dir / "describe-after-loss.json";
      nlohmann::json nodes = nlohmann::json::array();
      for (int j = 0; j < c.nodes(); ++j) nodes.push_back(c.describe(j));
      std::ofstream(file) << nodes.dump(2) << "\n";
      std::cerr << "[bench] " << r.lost << " ask(s) got no reply within 5 s (" << r.late
                << " of them later); pool stats in " << file.string() << "\n";
    }
    std::vector<std::int64_t> rtts;
    for (auto& e : fs::directory_iterator(s.stats_dir))
      if (e.path().extension() == ".rtt") {
        std::ifstream in(e.path());
        for (std::int64_t us; in >> us;) rtts.push_back(us);
      }
    std::sort(rtts.begin(), rtts.end());
    auto pct = [&](double p) {
      return rtts.empty()
                 ? 0.0
                 : double(rtts[std::min(rtts.size() - 1, std::size_t(p * double(rtts.size())))]) / 1e3;
    };
    r.p50_ms = pct(0.5), r.p90_ms = pct(0.9), r.p99_ms = pct(0.99),
    r.max_ms = rtts.empty() ? 0 : double(rtts.back()) / 1e3;
  } else {
    std::cerr << "[bench] request-reply did not finish\n";
  }
  c.shutdown(node, rsys);
  stop_systems(c, s.system, 1, s.system + ".supplier");
  return r;
}

readiness_probe::readiness_probe(std::function<bool()> ready, std::chrono::milliseconds period)
    : thread_([this, ready = std::move(ready), period] {
        while (!stop_) {
          const auto attempt = now_us();
          if (ready()) {
            ready_us_ = attempt;
            return;
          }
          std::this_thread::sleep_for(period);
        }
      }) {}

readiness_probe::~readiness_probe() {
  stop_ = true;
  thread_.join();
}

std::int64_t readiness_probe::wait(std::chrono::milliseconds timeout) {
  wait_until([&] { return ready_us_ > 0; }, timeout, 5ms);
  return ready_us_;
}

recovery measure_recovery(cluster_api& c, const setup& s, double rate, long count,
                          const std::function<std::int64_t()>& inject) {
  recovery r;
  r.count = count;
  const auto& url = s.mqs.front();
  c.deploy(0, url, {s.system, "consumer", "consumer", {{"stats_dir", s.stats_dir}}, 2, s.mode, 64});
  c.deploy(0, url,
           {s.system,
            "producer",
            "producer",
            {{"to", s.system + "/consumer"}, {"count", count}, {"rate", rate}, {"stats_dir", s.stats_dir}},
            1,
            s.mode,
            8});
  // The consumers run in one process (one isolate system): one stats file.
  auto stats = [&] {
    auto all = all_stats(s.stats_dir, "consumer-");
    return all.size() == 1 ? all.front() : nlohmann::json::object();
  };
  auto field = [](const nlohmann::json& j, const char* name) { return j.value(name, std::int64_t(0)); };
  auto finish = [&] {
    stop_systems(c, s.system, 1, s.system + ".consumer");
    c.delete_queue(s.system + ".producer");
    return r;
  };
  if (!wait_until([&] { return field(stats(), "received") >= std::int64_t(rate); }, 60s, 20ms)) {
    std::cerr << "[bench] exp8: consumption did not start\n";
    explain_stall(c, s);
    return finish();
  }
  const auto injected_us = now_us();
  const auto ready_us = r.ready_us = inject();
  if (ready_us == 0) {
    std::cerr << "[bench] exp8: the repaired peer did not accept connections\n";
    return finish();
  }
  // Nothing is consumed while the fault lasts, so a flow that had ended before the repair ended
  // before the fault began (the stats, written 200 ms after the last message, are final by now:
  // the fault lasts seconds): no outage to measure.
  if (const auto now = stats(); field(now, "unique") >= count && field(now, "last_us") <= ready_us) {
    std::cerr << "[bench] exp8: all " << count
              << " messages were consumed before the fault took effect: run void\n";
    r.flow_ended_first = true;
    r.unique = long(field(now, "unique"));
    r.duplicates = long(field(now, "duplicates"));
    return finish();
  }
  // The stats go out every 200 ms while messages flow: this wait does not time the resumption. It
  // waits for a message consumed after the repair; the outage is then the longest gap that ended
  // after the fault began (not the run's longest: a loaded machine may have stalled the flow for
  // longer before the fault). A probe that saw the peer ready late (its thread not scheduled) may
  // put the first message before `ready_us`: resumed at once, 0 s.
  r.resumed = wait_until([&] { return field(stats(), "last_us") > ready_us; }, 120s, 20ms);
  auto after = stats();
  std::pair<std::int64_t, std::int64_t> outage{0, 0};
  for (auto& gap : after.value("gaps", nlohmann::json::array()))
    if (gap.is_array() && gap.size() == 2 && gap[1].get<std::int64_t>() > injected_us &&
        gap[1].get<std::int64_t>() - gap[0].get<std::int64_t>() > outage.second - outage.first)
      outage = {gap[0].get<std::int64_t>(), gap[1].get<std::int64_t>()};
  r.resumed = r.resumed && outage.second > 0;
  if (r.resumed) {
    r.resume_s = double(std::max<std::int64_t>(0, outage.second - ready_us)) / 1e6;
    r.outage_s = double(outage.second - outage.first) / 1e6;
    r.stopped_us = outage.first;
    r.resumed_us = outage.second;
  } else {
    std::cerr << "[bench] exp8: consuming did not resume within 120 s of the repair\n";
    explain_stall(c, s);
  }
  wait_until([&] { return field(stats(), "unique") >= count; }, point_timeout, 50ms);
  after = stats();
  r.unique = long(field(after, "unique"));
  r.duplicates = long(field(after, "duplicates"));
  if (r.unique < count) {
    std::cerr << "[bench] exp8: " << r.unique << " of " << count << " messages consumed\n";
    explain_stall(c, s);
  }
  return finish();
}

namespace {

double cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  // After the command's closing parenthesis: state is field 3; utime and stime are fields 14 and 15.
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i)
    if (i >= 14) ticks += std::stod(f);
  return ticks / double(::sysconf(_SC_CLK_TCK));
}

}  // namespace

cpu_meter::cpu_meter(int pid) : pid_(pid) {
  thread_ = std::thread([this] {
    while (!stop_) {
      samples_.push_back({now_us(), cpu_seconds(pid_)});
      std::this_thread::sleep_for(5ms);
    }
  });
}

cpu_meter::~cpu_meter() { stop(); }

void cpu_meter::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

double cpu_meter::between(std::int64_t from_us, std::int64_t to_us) {
  stop();
  if (samples_.empty()) return 0;
  // The last sample at or before an instant (the first one if none is).
  auto at = [&](std::int64_t t) {
    double cpu = samples_.front().cpu_s;
    for (auto& s : samples_) {
      if (s.wall_us > t) break;
      cpu = s.cpu_s;
    }
    return cpu;
  };
  return std::max(0.0, at(to_us) - at(from_us));
}

raw_flow raw_produce_consume(cluster_api& c, const std::string& mode, long n, int size, int producers,
                             int consumers, int prefetch, std::chrono::milliseconds rest) {
  auto queue = unique_queue();
  std::vector<std::string> base{"--queue",         queue,    "--count",
                                std::to_string(n), "--size", std::to_string(size)};
  for (auto& a : raw_mode_args(mode)) base.push_back(a);
  auto produce_args = base;
  produce_args.insert(produce_args.begin(), "produce");
  produce_args.insert(produce_args.end(), {"--connections", std::to_string(producers)});
  auto produced = run_raw(c.broker_port(), produce_args);
  raw_flow f;
  f.produce = produced.count("rate") ? produced["rate"] : 0;
  f.produce_client = produced.count("client_rate") ? produced["client_rate"] : 0;
  if (consumers > 0) {
    auto consume_args = base;
    consume_args.insert(consume_args.begin(), "consume");
    consume_args.insert(consume_args.end(),
                        {"--connections", std::to_string(consumers), "--prefetch", std::to_string(prefetch)});
    std::this_thread::sleep_for(rest);  // the queue's state under test, not a wait for an event
    auto consumed = run_raw(c.broker_port(), consume_args);
    f.consume = consumed.count("rate") ? consumed["rate"] : 0;
    run_raw(c.broker_port(), produce_args);  // the same messages again, for the best consumer
    consume_args.push_back("--multiple-ack");
    std::this_thread::sleep_for(rest);
    cpu_meter broker_cpu(c.broker_pid());
    auto best = run_raw(c.broker_port(), consume_args);
    f.consume_best = best.count("rate") ? best["rate"] : 0;
    f.consume_best_steady = best.count("steady_rate") ? best["steady_rate"] : 0;
    if (best.count("first_us") && best.count("last_us") && n > 0)
      f.broker_us_best =
          broker_cpu.between(std::int64_t(best["first_us"]), std::int64_t(best["last_us"])) * 1e6 / double(n);
  }
  c.delete_queue(queue);
  return f;
}

raw_flow raw_simultaneous(cluster_api& c, const std::string& mode, long n, int producers, int consumers,
                          int prefetch) {
  auto queue = unique_queue();
  std::vector<std::string> base{"--queue", queue, "--count", std::to_string(n)};
  for (auto& a : raw_mode_args(mode)) base.push_back(a);
  auto consume_args = base, produce_args = base;
  consume_args.insert(consume_args.begin(), "consume");
  consume_args.insert(consume_args.end(),
                      {"--connections", std::to_string(consumers), "--prefetch", std::to_string(prefetch)});
  produce_args.insert(produce_args.begin(), "produce");
  produce_args.insert(produce_args.end(), {"--connections", std::to_string(producers)});
  // Declared once before both clients start: RabbitMQ refuses one of two concurrent declares of a new
  // quorum queue (404 "home node ... is down or inaccessible"), which left a point with no baseline.
  auto declare_args = base;
  declare_args.insert(declare_args.begin(), "declare");
  run_raw(c.broker_port(), declare_args);
  auto consumed = std::async(std::launch::async, [&] { return run_raw(c.broker_port(), consume_args); });
  auto produced = run_raw(c.broker_port(), produce_args);
  auto got = consumed.get();
  c.delete_queue(queue);
  raw_flow f;
  f.produce = produced.count("rate") ? produced["rate"] : 0;  // at the broker (raw has no isolate)
  f.consume = got.count("rate") ? got["rate"] : 0;
  return f;
}

request_reply raw_ask(cluster_api& c, const std::string& mode, int requesters, int suppliers, long asks) {
  auto queue = unique_queue();
  std::vector<std::string> args{"rpc",
                                "--queue",
                                queue,
                                "--count",
                                std::to_string(asks * requesters),
                                "--connections",
                                std::to_string(requesters),
                                "--suppliers",
                                std::to_string(suppliers),
                                "--prefetch",
                                "8",
                                "--size",
                                "64"};
  if (mode == "at-least-once")
    args.insert(args.end(), {"--queue-type", "quorum", "--persistent"});
  else
    args.insert(args.end(), {"--queue-type", "transient"});
  auto r = run_raw(c.broker_port(), args);
  c.delete_queue(queue);
  request_reply out;
  if (r.empty()) return out;
  out.rate = r["rate"];
  out.p50_ms = r["p50_us"] / 1e3, out.p90_ms = r["p90_us"] / 1e3, out.p99_ms = r["p99_us"] / 1e3;
  out.max_ms = r["max_us"] / 1e3;
  return out;
}

}  // namespace dde::bench
