// dde-raw-amqp: the plain rabbitmq-c baseline that DDE's messaging benchmarks compare against.
// No framework: produce (optionally with publisher confirms), consume (basic.qos + manual acks),
// each over one or more connections (one thread each), and rpc (raw_rpc.cpp); each command prints
// one result line on stdout.
#include "raw_amqp.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "steady_rate.hpp"

namespace {

using namespace dde::raw;

constexpr const char* usage = R"(usage: dde-raw-amqp COMMAND [options]
commands:
  produce   publish --count messages of --size bytes to --queue (declared first)
  consume   consume --count messages from --queue (declared first)
  rpc       --connections requesters ask --suppliers suppliers through --queue, one request in flight
            each (request-reply with reply-to queues); prints the rate and round-trip percentiles
  latency   one connection publishes --count messages at --rate a second, each stamped with the
            wall-clock µs it was published at, while another consumes them; prints the percentiles
            of publish-to-delivery time over the messages delivered after the first second
  peek      print the body size of the first message in --queue (it stays there)
  declare | purge | delete   manage --queue
options (default):
  --host H (127.0.0.1)  --port P (5672)  --queue Q (required)
  --queue-type classic|quorum|transient (classic): transient = non-durable classic,
               classic = durable classic, quorum = durable with x-queue-type=quorum
  --queue-arg KEY=VALUE: one more queue argument (repeatable), e.g. x-queue-version=2 or
               x-queue-mode=lazy; a value of digits goes as a number
  --count N (100000)  --size BYTES (64)  --persistent (off: delivery mode 1)
  --dde-props: produce with the properties the MQS gives a message (a 23-character message id, an
               app id, a timestamp), to tell what they cost the broker from what DDE does
  --props id,app,ts: only some of them (a comma-separated subset; same-id: every message the same id)
  --confirm-window W (0 = no publisher confirms; else at most W unconfirmed messages)
  --prefetch K (1)  --multiple-ack (off: ack each message; on: ack with multiple every K/2)
  --ack-every N (K/2): with --multiple-ack, ack every N messages
  --connections C (1): produce/consume over C connections at once (the count is shared); rpc: requesters
  --suppliers S (1): rpc only
  --rate R (0 = as fast as it can): produce, latency: messages a second over all connections
  --consumers-per-channel K (1): consume: K broker consumers (each with the prefetch) share each
               connection's channel and its acks, as dde-mqs's consumers of one topic do
  --idle-timeout SECONDS (30): give up when nothing arrives for this long
  --progress: consume: print "progress MS COUNT" on stderr once a second (ms since the first delivery)
output: one line, e.g. "raw produce count=100000 size=64 seconds=1.234 rate=81037 msg/s client_rate=90000";
  consume adds first_second=N (deliveries in the first second) and steady_rate=R (the rate after it;
  0 when less than half a second follows it); latency adds latency_count=N latency_p50_us=..
  latency_p99_us=.. latency_max_us=..
)";

options parse(int argc, char** argv) {
  options o;
  if (argc < 2) throw std::invalid_argument("missing command");
  o.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--host")
      o.host = value();
    else if (flag == "--port")
      o.port = std::stoi(value());
    else if (flag == "--queue")
      o.queue = value();
    else if (flag == "--queue-type")
      o.queue_type = value();
    else if (flag == "--queue-arg") {
      const std::string arg = value();
      const auto eq = arg.find('=');
      if (eq == std::string::npos || eq == 0)
        throw std::invalid_argument("--queue-arg wants KEY=VALUE, got " + arg);
      o.queue_args.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
    } else if (flag == "--count")
      o.count = std::stoull(value());
    else if (flag == "--size")
      o.size = std::stoull(value());
    else if (flag == "--persistent")
      o.persistent = true;
    else if (flag == "--dde-props")
      o.props = {true, true, true};
    else if (flag == "--props") {
      std::string list = "," + value() + ",";
      o.props = {list.find(",id,") != std::string::npos, list.find(",app,") != std::string::npos,
                 list.find(",ts,") != std::string::npos, list.find(",same-id,") != std::string::npos};
      o.props.id = o.props.id || o.props.same_id;
      if (!o.props.id && !o.props.app && !o.props.ts)
        throw std::invalid_argument("--props: name id, same-id, app or ts");
    } else if (flag == "--confirm-window")
      o.confirm_window = std::stoull(value());
    else if (flag == "--prefetch")
      o.prefetch = static_cast<std::uint16_t>(std::stoul(value()));
    else if (flag == "--multiple-ack")
      o.multiple_ack = true;
    else if (flag == "--ack-every")
      o.ack_every = std::stoull(value());
    else if (flag == "--connections")
      o.connections = std::stoi(value());
    else if (flag == "--consumers-per-channel")
      o.consumers_per_channel = std::stoi(value());
    else if (flag == "--suppliers")
      o.suppliers = std::stoi(value());
    else if (flag == "--progress")
      o.progress = true;
    else if (flag == "--rate")
      o.rate = std::stod(value());
    else if (flag == "--idle-timeout")
      o.idle_timeout_s = std::stoi(value());
    else
      throw std::invalid_argument("unknown option " + flag);
  }
  if (o.queue.empty()) throw std::invalid_argument("--queue is required");
  if (o.queue_type != "classic" && o.queue_type != "quorum" && o.queue_type != "transient")
    throw std::invalid_argument("--queue-type must be classic, quorum or transient");
  if (o.prefetch == 0) throw std::invalid_argument("--prefetch must be at least 1");
  if (!(o.rate >= 0)) throw std::invalid_argument("--rate must be 0 or more");
  if (o.command == "latency" && o.size < sizeof(std::int64_t))
    throw std::invalid_argument("latency: --size must hold the 8-byte stamp");
  if (o.connections < 1 || o.suppliers < 1 || o.consumers_per_channel < 1)
    throw std::invalid_argument("--connections/--suppliers/--consumers-per-channel must be >= 1");
  return o;
}

/// Runs `body(index)` on `n` threads at once; rethrows the first failure.
template <class F>
void on_threads(int n, F body) {
  std::vector<std::thread> threads;
  threads.reserve(std::size_t(n));
  std::mutex mutex;
  std::exception_ptr failure;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

/// Wall-clock µs now: what a stamp holds, comparable across processes on one machine.
std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Publishes `count` messages on `c`; returns when the broker has them all (confirmed, or a round trip).
/// With --rate, message i goes at i/rate s after the first (this connection's share of the rate);
/// `stamp` writes the wall-clock µs it goes at into its first 8 bytes.
void publish_share(const connection& c, const options& o, std::uint64_t count, clock_type::time_point& sent,
                   bool stamp = false) {
  std::string body(o.size, 'x');
  const auto paced_from = clock_type::now();
  const double share_rate = o.rate / double(o.connections);
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = o.persistent ? 2 : 1;
  char id[24];
  static const std::string app_id = "pp/producer";  // a producer pool's sender, as bench/profile has it
  if (o.props.id) props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
  if (o.props.ts) props._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
  if (o.props.app) {
    props._flags |= AMQP_BASIC_APP_ID_FLAG;
    props.app_id = amqp_bytes_t{app_id.size(), const_cast<char*>(app_id.data())};
  }
  confirms window;
  for (std::uint64_t published = 0; published < count; ++published) {
    if (o.props.id) {
      std::snprintf(id, sizeof id, "%023llu",
                    static_cast<unsigned long long>(o.props.same_id ? 0 : published));
      props.message_id = amqp_bytes_t{23, id};
    }
    if (o.props.ts) {
      props.timestamp = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                       std::chrono::system_clock::now().time_since_epoch())
                                                       .count());
    }
    if (o.confirm_window > 0 && published - window.confirmed >= o.confirm_window)
      window.await(c, published - o.confirm_window + 1, o.idle_timeout_s);
    if (share_rate > 0)
      std::this_thread::sleep_until(paced_from +
                                    std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(double(published) / share_rate)));
    if (stamp) {
      const auto now = wall_us();
      std::memcpy(body.data(), &now, sizeof now);
    }
    check_status(amqp_basic_publish(c.get(), channel, amqp_empty_bytes, amqp_cstring_bytes(o.queue.c_str()),
                                    0, 0, &props, amqp_bytes_t{body.size(), const_cast<char*>(body.data())}),
                 "basic.publish");
  }
  sent = clock_type::now();
  if (o.confirm_window > 0) {
    window.await(c, count, o.idle_timeout_s);
  } else {
    // Without confirms, a round trip on the same channel marks when the broker took them all.
    amqp_queue_declare(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), 1, 0, 0, 0, amqp_empty_table);
    c.rpc_ok("queue.declare passive");
  }
  if (window.nacked > 0) std::cerr << "warning: " << window.nacked << " messages nacked by the broker\n";
}

void produce(const options& o) {
  {
    connection c(o);
    declare(c, o);
  }
  const int n = o.connections;
  std::vector<std::unique_ptr<connection>> conns;
  for (int i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<connection>(o));
    if (o.confirm_window > 0) {
      amqp_confirm_select(conns.back()->get(), channel);
      conns.back()->rpc_ok("confirm.select");
    }
  }
  std::vector<clock_type::time_point> sent(std::size_t(n), clock_type::time_point{});
  const auto start = clock_type::now();
  on_threads(n, [&](int i) {
    const std::uint64_t share =
        o.count / std::uint64_t(n) + (std::uint64_t(i) < o.count % std::uint64_t(n) ? 1 : 0);
    publish_share(*conns[std::size_t(i)], o, share, sent[std::size_t(i)]);
  });
  const auto end = clock_type::now();
  // client_rate: until every connection had handed its last message to the socket (as "at the isolate").
  const double client_s =
      std::chrono::duration<double>(*std::max_element(sent.begin(), sent.end()) - start).count();
  report("produce", o.count, o.size, start, end,
         "client_rate=" + std::to_string(std::llround(client_s > 0 ? double(o.count) / client_s : 0)));
}

/// Shared by the consuming threads: the count to reach, and the first and last delivery times.
struct consume_tally {
  std::mutex mutex;
  std::uint64_t received = 0, redelivered = 0;
  std::uint64_t first_second = 0;  ///< deliveries within a second of the first: a burst, reported apart
  std::size_t size = 0;
  clock_type::time_point start{}, end{}, next_progress{};
  bool progress = false;
  bool stamped = false;                 ///< bodies begin with their publish time (latency)
  std::vector<std::int64_t> latencies;  ///< µs from publish to delivery, after the first second
  std::atomic<bool> finished{false};
  /// Counts one delivery; false once the total was reached (the caller stops).
  bool record(const amqp_envelope_t& e, std::uint64_t count) {
    std::lock_guard lock(mutex);
    if (received >= count) return false;
    auto now = clock_type::now();
    if (received++ == 0) start = next_progress = now;
    if (now - start <= std::chrono::seconds(1)) {
      first_second = received;
    } else if (stamped && e.message.body.len >= sizeof(std::int64_t)) {
      std::int64_t sent_us = 0;
      std::memcpy(&sent_us, e.message.body.bytes, sizeof sent_us);
      latencies.push_back(wall_us() - sent_us);
    }
    if (progress && now >= next_progress) {
      std::fprintf(
          stderr, "progress %lld %llu\n",
          static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()),
          static_cast<unsigned long long>(received));
      next_progress += std::chrono::seconds(1);
    }
    end = now;
    size = e.message.body.len;
    redelivered += e.redelivered ? 1 : 0;
    if (received == count) finished = true;
    return true;
  }
};

void consume_on(const connection& c, const options& o, consume_tally& tally) {
  amqp_basic_qos(c.get(), channel, 0, o.prefetch, /*global=*/0);
  c.rpc_ok("basic.qos");
  std::vector<std::string> consumer_tags;
  for (int k = 0; k < o.consumers_per_channel; ++k) {
    const auto* consume_ok = amqp_basic_consume(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()),
                                                amqp_empty_bytes, 0, /*no_ack=*/0, 0, amqp_empty_table);
    c.rpc_ok("basic.consume");
    consumer_tags.push_back(text(consume_ok->consumer_tag));
  }
  const std::uint64_t ack_every = !o.multiple_ack   ? 1
                                  : o.ack_every > 0 ? o.ack_every
                                                    : std::max<std::uint64_t>(1, o.prefetch / 2);
  std::uint64_t unacked = 0, last_tag = 0;
  auto last_progress = clock_type::now();
  while (!tally.finished) {
    amqp_maybe_release_buffers(c.get());
    amqp_envelope_t envelope;
    timeval timeout{0, 50000};
    const auto r = amqp_consume_message(c.get(), &envelope, &timeout, 0);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) {
      if (clock_type::now() - last_progress > std::chrono::seconds(o.idle_timeout_s))
        throw std::runtime_error("no delivery for " + std::to_string(o.idle_timeout_s) + " s");
      continue;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
      // A method other than basic.deliver arrived (e.g. the broker closing the channel).
      amqp_frame_t frame;
      check_status(amqp_simple_wait_frame(c.get(), &frame), "read frame");
      if (frame.frame_type == AMQP_FRAME_METHOD && (frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
                                                    frame.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD))
        check({AMQP_RESPONSE_SERVER_EXCEPTION, frame.payload.method, 0}, "consume");
      continue;
    }
    check(r, "consume");
    const bool counted = tally.record(envelope, o.count);
    last_tag = envelope.delivery_tag;
    amqp_destroy_envelope(&envelope);
    if (!counted) break;  // past the total: left unacked, the broker requeues it at close
    if (++unacked >= ack_every || tally.finished) {
      check_status(amqp_basic_ack(c.get(), channel, last_tag, /*multiple=*/o.multiple_ack), "basic.ack");
      unacked = 0;
    }
    last_progress = clock_type::now();
  }
  for (auto& tag : consumer_tags) amqp_basic_cancel(c.get(), channel, amqp_cstring_bytes(tag.c_str()));
}

void consume(const options& o) {
  {
    connection c(o);
    declare(c, o);
  }
  std::vector<std::unique_ptr<connection>> conns;
  conns.reserve(std::size_t(o.connections));
  for (int i = 0; i < o.connections; ++i) conns.push_back(std::make_unique<connection>(o));
  consume_tally tally;
  tally.progress = o.progress;
  on_threads(o.connections, [&](int i) { consume_on(*conns[std::size_t(i)], o, tally); });
  if (tally.redelivered > 0) std::cerr << "note: " << tally.redelivered << " deliveries were redeliveries\n";
  // The rate after the first second: what a consumer sustains once the first burst (the broker's
  // and the kernel's buffers, caches still warm) is over.
  const double steady =
      dde::bench::steady_rate(double(tally.received), double(tally.first_second),
                              std::chrono::duration<double>(tally.end - tally.start).count());
  report("consume", tally.received, tally.size, tally.start, tally.end,
         "first_second=" + std::to_string(tally.first_second) +
             " steady_rate=" + std::to_string(std::llround(steady)));
}

/// The `q` quantile of `v` (nearest rank; reorders it), 0 for none.
std::int64_t quantile(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  const auto rank = std::min(v.size() - 1, std::size_t(q * double(v.size())));
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(rank), v.end());
  return v[rank];
}

/// The end-to-end latency of a flow at --rate: a publishing connection and a consuming one at once.
void latency(const options& o) {
  {
    connection c(o);
    declare(c, o);
  }
  connection publisher(o), subscriber(o);
  if (o.confirm_window > 0) {
    amqp_confirm_select(publisher.get(), channel);
    publisher.rpc_ok("confirm.select");
  }
  consume_tally tally;
  tally.stamped = true;
  options one = o;
  one.connections = 1;
  clock_type::time_point sent{};
  on_threads(2, [&](int i) {
    if (i == 0)
      consume_on(subscriber, one, tally);
    else
      publish_share(publisher, one, o.count, sent, true);
  });
  auto& l = tally.latencies;
  const auto count = l.size();
  const auto p50 = quantile(l, 0.50), p99 = quantile(l, 0.99), max = quantile(l, 1.0);
  report("latency", tally.received, tally.size, tally.start, tally.end,
         "latency_count=" + std::to_string(count) + " latency_p50_us=" + std::to_string(p50) +
             " latency_p99_us=" + std::to_string(p99) + " latency_max_us=" + std::to_string(max));
}

/// Prints the body size of the first message in the queue and gives it back (basic.get, basic.reject
/// with requeue): what the broker holds of a message someone else published.
void peek(const options& o) {
  connection c(o);
  amqp_rpc_reply_t r = amqp_basic_get(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), /*no_ack=*/0);
  check(r, "basic.get " + o.queue);
  if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) throw std::runtime_error("queue " + o.queue + " is empty");
  const auto tag = static_cast<amqp_basic_get_ok_t*>(r.reply.decoded)->delivery_tag;
  amqp_message_t message;
  check(amqp_read_message(c.get(), channel, &message, 0), "read message");
  std::printf("raw peek size=%zu\n", message.body.len);
  amqp_destroy_message(&message);
  check_status(amqp_basic_reject(c.get(), channel, tag, /*requeue=*/1), "basic.reject");
}

void manage(const options& o) {
  connection c(o);
  if (o.command == "declare") {
    std::cout << "declared " << o.queue << " messages=" << declare(c, o) << "\n";
  } else if (o.command == "purge") {
    const auto* ok = amqp_queue_purge(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()));
    c.rpc_ok("queue.purge " + o.queue);
    std::cout << "purged " << o.queue << " messages=" << ok->message_count << "\n";
  } else {
    const auto* ok = amqp_queue_delete(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), 0, 0);
    c.rpc_ok("queue.delete " + o.queue);
    std::cout << "deleted " << o.queue << " messages=" << ok->message_count << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::cout << usage;
    return 0;
  }
  try {
    const auto o = parse(argc, argv);
    if (o.command == "produce")
      produce(o);
    else if (o.command == "latency")
      latency(o);
    else if (o.command == "consume")
      consume(o);
    else if (o.command == "rpc")
      rpc(o);
    else if (o.command == "peek")
      peek(o);
    else if (o.command == "declare" || o.command == "purge" || o.command == "delete")
      manage(o);
    else
      throw std::invalid_argument("unknown command " + o.command);
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "dde-raw-amqp: " << e.what() << "\n" << usage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dde-raw-amqp: " << e.what() << "\n";
    return 1;
  }
}
