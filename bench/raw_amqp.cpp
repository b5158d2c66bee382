// dde-raw-amqp: the plain rabbitmq-c baseline that DDE's messaging benchmarks compare against.
// One connection, one channel, no framework: produce (optionally with publisher confirms) and
// consume (basic.qos + manual acks), each printing one result line on stdout.
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

namespace {

constexpr amqp_channel_t channel = 1;
constexpr const char* usage = R"(usage: dde-raw-amqp COMMAND [options]
commands:
  produce   publish --count messages of --size bytes to --queue (declared first)
  consume   consume --count messages from --queue (declared first)
  declare | purge | delete   manage --queue
options (default):
  --host H (127.0.0.1)  --port P (5672)  --queue Q (required)
  --queue-type classic|quorum|transient (classic): transient = non-durable classic,
               classic = durable classic, quorum = durable with x-queue-type=quorum
  --count N (100000)  --size BYTES (64)  --persistent (off: delivery mode 1)
  --confirm-window W (0 = no publisher confirms; else at most W unconfirmed messages)
  --prefetch K (1)  --multiple-ack (off: ack each message; on: ack with multiple every K/2)
  --idle-timeout SECONDS (30): give up when nothing arrives for this long
output: one line, e.g. "raw produce count=100000 size=64 seconds=1.234 rate=81037 msg/s"
)";

struct options {
  std::string command, host = "127.0.0.1", queue, queue_type = "classic";
  int port = 5672;
  std::uint64_t count = 100000;
  std::size_t size = 64;
  bool persistent = false, multiple_ack = false;
  std::uint64_t confirm_window = 0;
  std::uint16_t prefetch = 1;
  int idle_timeout_s = 30;
};

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
    else if (flag == "--count")
      o.count = std::stoull(value());
    else if (flag == "--size")
      o.size = std::stoull(value());
    else if (flag == "--persistent")
      o.persistent = true;
    else if (flag == "--confirm-window")
      o.confirm_window = std::stoull(value());
    else if (flag == "--prefetch")
      o.prefetch = static_cast<std::uint16_t>(std::stoul(value()));
    else if (flag == "--multiple-ack")
      o.multiple_ack = true;
    else if (flag == "--idle-timeout")
      o.idle_timeout_s = std::stoi(value());
    else
      throw std::invalid_argument("unknown option " + flag);
  }
  if (o.queue.empty()) throw std::invalid_argument("--queue is required");
  if (o.queue_type != "classic" && o.queue_type != "quorum" && o.queue_type != "transient")
    throw std::invalid_argument("--queue-type must be classic, quorum or transient");
  if (o.prefetch == 0) throw std::invalid_argument("--prefetch must be at least 1");
  return o;
}

std::string text(amqp_bytes_t b) { return {static_cast<const char*>(b.bytes), b.len}; }

/// Throws unless an RPC reply is normal, with the broker's reason when it closed the channel.
void check(const amqp_rpc_reply_t& r, const std::string& what) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
    throw std::runtime_error(what + ": " + amqp_error_string2(r.library_error));
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    const auto* c = static_cast<const amqp_channel_close_t*>(r.reply.decoded);
    throw std::runtime_error(what + ": channel closed: " + std::to_string(c->reply_code) + " " +
                             text(c->reply_text));
  }
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    const auto* c = static_cast<const amqp_connection_close_t*>(r.reply.decoded);
    throw std::runtime_error(what + ": connection closed: " + std::to_string(c->reply_code) + " " +
                             text(c->reply_text));
  }
  throw std::runtime_error(what + ": failed");
}

void check_status(int status, const std::string& what) {
  if (status != AMQP_STATUS_OK) throw std::runtime_error(what + ": " + amqp_error_string2(status));
}

/// One connection with channel 1 open; closed on destruction.
class connection {
 public:
  explicit connection(const options& o) : conn_(amqp_new_connection()) {
    amqp_socket_t* socket = amqp_tcp_socket_new(conn_);
    timeval timeout{10, 0};
    if (socket == nullptr) throw std::runtime_error("amqp_tcp_socket_new failed");
    check_status(amqp_socket_open_noblock(socket, o.host.c_str(), o.port, &timeout),
                 "connect " + o.host + ":" + std::to_string(o.port));
    check(amqp_login(conn_, "/", 0, AMQP_DEFAULT_FRAME_SIZE, /*heartbeat=*/10, AMQP_SASL_METHOD_PLAIN,
                     "guest", "guest"),
          "login");
    amqp_channel_open(conn_, channel);
    check(amqp_get_rpc_reply(conn_), "channel.open");
  }
  ~connection() {
    amqp_channel_close(conn_, channel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn_);
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  amqp_connection_state_t get() const { return conn_; }
  void rpc_ok(const std::string& what) const { check(amqp_get_rpc_reply(conn_), what); }

 private:
  amqp_connection_state_t conn_;
};

/// Declares the queue as `--queue-type` says; returns the messages ready in it.
std::uint32_t declare(const connection& c, const options& o) {
  amqp_table_entry_t type{amqp_cstring_bytes("x-queue-type"), {}};
  type.value.kind = AMQP_FIELD_KIND_UTF8;
  type.value.value.bytes = amqp_cstring_bytes("quorum");
  const amqp_table_t args = o.queue_type == "quorum" ? amqp_table_t{1, &type} : amqp_empty_table;
  const auto* ok = amqp_queue_declare(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), 0,
                                      /*durable=*/o.queue_type != "transient", 0, 0, args);
  c.rpc_ok("queue.declare " + o.queue);
  return ok->message_count;
}

using clock_type = std::chrono::steady_clock;

void report(const char* what, std::uint64_t count, std::size_t size, clock_type::time_point start,
            clock_type::time_point end) {
  const double seconds = std::chrono::duration<double>(end - start).count();
  std::printf("raw %s count=%llu size=%zu seconds=%.3f rate=%.0f msg/s\n", what,
              static_cast<unsigned long long>(count), size, seconds,
              seconds > 0 ? static_cast<double>(count) / seconds : 0.0);
}

/// Publisher-confirm bookkeeping: rabbitmq-c 0.11 has no helper, so basic.ack/nack are read here.
struct confirms {
  std::uint64_t confirmed = 0, nacked = 0;

  /// Reads frames (50 ms at a time, so heartbeats flow) until `until` tags are confirmed.
  void await(const connection& c, std::uint64_t until, int idle_timeout_s) {
    auto last_progress = clock_type::now();
    while (confirmed < until) {
      amqp_frame_t frame;
      timeval timeout{0, 50000};
      const int status = amqp_simple_wait_frame_noblock(c.get(), &frame, &timeout);
      if (status == AMQP_STATUS_TIMEOUT) {
        if (clock_type::now() - last_progress > std::chrono::seconds(idle_timeout_s))
          throw std::runtime_error("no publisher confirm for " + std::to_string(idle_timeout_s) + " s");
        continue;
      }
      check_status(status, "wait for confirms");
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;
      const auto id = frame.payload.method.id;
      if (id == AMQP_BASIC_ACK_METHOD || id == AMQP_BASIC_NACK_METHOD) {
        const bool ack = id == AMQP_BASIC_ACK_METHOD;
        const auto tag = ack ? static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded)->delivery_tag
                             : static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded)->delivery_tag;
        const bool multiple = ack ? static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded)->multiple
                                  : static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded)->multiple;
        // RabbitMQ confirms a channel's tags in order, so `multiple` covers everything up to tag.
        const std::uint64_t settled = multiple ? tag - confirmed : 1;
        confirmed += settled;
        if (!ack) nacked += settled;
        last_progress = clock_type::now();
      } else if (id == AMQP_CHANNEL_CLOSE_METHOD || id == AMQP_CONNECTION_CLOSE_METHOD) {
        check({AMQP_RESPONSE_SERVER_EXCEPTION, frame.payload.method, 0}, "publish");
      }
    }
  }
};

void produce(const options& o) {
  connection c(o);
  declare(c, o);
  if (o.confirm_window > 0) {
    amqp_confirm_select(c.get(), channel);
    c.rpc_ok("confirm.select");
  }
  const std::string body(o.size, 'x');
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = o.persistent ? 2 : 1;
  confirms window;
  const auto start = clock_type::now();
  for (std::uint64_t published = 0; published < o.count; ++published) {
    if (o.confirm_window > 0 && published - window.confirmed >= o.confirm_window)
      window.await(c, published - o.confirm_window + 1, o.idle_timeout_s);
    check_status(amqp_basic_publish(c.get(), channel, amqp_empty_bytes, amqp_cstring_bytes(o.queue.c_str()),
                                    0, 0, &props, amqp_bytes_t{body.size(), const_cast<char*>(body.data())}),
                 "basic.publish");
  }
  if (o.confirm_window > 0) {
    window.await(c, o.count, o.idle_timeout_s);
  } else {
    // Without confirms, a round trip on the same channel marks when the broker took them all.
    amqp_queue_declare(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), 1, 0, 0, 0, amqp_empty_table);
    c.rpc_ok("queue.declare passive");
  }
  const auto end = clock_type::now();
  if (window.nacked > 0) std::cerr << "warning: " << window.nacked << " messages nacked by the broker\n";
  report("produce", o.count, o.size, start, end);
}

void consume(const options& o) {
  connection c(o);
  declare(c, o);
  amqp_basic_qos(c.get(), channel, 0, o.prefetch, /*global=*/0);
  c.rpc_ok("basic.qos");
  const auto* consume_ok = amqp_basic_consume(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()),
                                              amqp_empty_bytes, 0, /*no_ack=*/0, 0, amqp_empty_table);
  c.rpc_ok("basic.consume");
  const std::string consumer_tag = text(consume_ok->consumer_tag);
  const std::uint64_t ack_every = o.multiple_ack ? std::max<std::uint64_t>(1, o.prefetch / 2) : 1;
  std::uint64_t received = 0, unacked = 0, last_tag = 0, redelivered = 0;
  std::size_t size = 0;
  clock_type::time_point start, end;
  auto last_progress = clock_type::now();
  while (received < o.count) {
    amqp_maybe_release_buffers(c.get());
    amqp_envelope_t envelope;
    timeval timeout{0, 50000};
    const auto r = amqp_consume_message(c.get(), &envelope, &timeout, 0);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) {
      if (clock_type::now() - last_progress > std::chrono::seconds(o.idle_timeout_s))
        throw std::runtime_error("no delivery for " + std::to_string(o.idle_timeout_s) + " s after " +
                                 std::to_string(received) + " messages");
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
    if (received++ == 0) start = clock_type::now();
    size = envelope.message.body.len;
    last_tag = envelope.delivery_tag;
    redelivered += envelope.redelivered ? 1 : 0;
    amqp_destroy_envelope(&envelope);
    if (++unacked >= ack_every || received == o.count) {
      check_status(amqp_basic_ack(c.get(), channel, last_tag, /*multiple=*/o.multiple_ack), "basic.ack");
      unacked = 0;
    }
    last_progress = end = clock_type::now();
  }
  amqp_basic_cancel(c.get(), channel, amqp_cstring_bytes(consumer_tag.c_str()));
  c.rpc_ok("basic.cancel");
  if (redelivered > 0) std::cerr << "note: " << redelivered << " deliveries were redeliveries\n";
  report("consume", received, size, start, end);
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
    else if (o.command == "consume")
      consume(o);
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
