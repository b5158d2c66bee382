#pragma once
// dde-raw-amqp's building blocks: options, one rabbitmq-c connection, queue declaration, publisher
// confirm bookkeeping and the result line. Shared by produce/consume (raw_amqp.cpp) and rpc (raw_rpc.cpp).
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dde::raw {

constexpr amqp_channel_t channel = 1;

struct options {
  std::string command, host = "127.0.0.1", queue, queue_type = "classic";
  int port = 5672;
  std::uint64_t count = 100000;
  std::size_t size = 64;
  bool persistent = false, multiple_ack = false;
  /// produce: which of the MQS's properties each message gets (message id, app id, timestamp)
  struct props_set {
    bool id = false, app = false, ts = false;
    bool same_id = false;  ///< with id: every message the same id
  } props;
  std::uint64_t confirm_window = 0;
  std::uint16_t prefetch = 1;
  std::uint64_t ack_every = 0;  ///< with multiple_ack: ack after this many (0: prefetch / 2)
  int idle_timeout_s = 30;
  bool progress = false;  ///< consume: the running count on stderr once a second
  int connections = 1;    ///< produce/consume: parallel connections (one thread each); rpc: requesters
  int suppliers = 1;      ///< rpc: supplier connections
  int consumers_per_channel = 1;  ///< consume: broker consumers on each connection's one channel
  double rate = 0;  ///< produce, latency: messages a second over all connections (0: as fast as it can)
  /// declare: more queue arguments (x-queue-version=2, x-queue-mode=lazy...); digits go as a long
  std::vector<std::pair<std::string, std::string>> queue_args;
};

inline std::string text(amqp_bytes_t b) { return {static_cast<const char*>(b.bytes), b.len}; }

/// Throws unless an RPC reply is normal, with the broker's reason when it closed the channel.
inline void check(const amqp_rpc_reply_t& r, const std::string& what) {
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

inline void check_status(int status, const std::string& what) {
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
inline std::uint32_t declare(const connection& c, const options& o) {
  auto entry = [](const std::string& key, const std::string& value) {
    amqp_table_entry_t e{amqp_cstring_bytes(key.c_str()), {}};
    if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
      e.value.kind = AMQP_FIELD_KIND_I64;
      e.value.value.i64 = std::stoll(value);
    } else {
      e.value.kind = AMQP_FIELD_KIND_UTF8;
      e.value.value.bytes = amqp_cstring_bytes(value.c_str());
    }
    return e;
  };
  static const std::string quorum_key = "x-queue-type", quorum = "quorum";
  std::vector<amqp_table_entry_t> entries;
  if (o.queue_type == "quorum") entries.push_back(entry(quorum_key, quorum));
  for (const auto& [key, value] : o.queue_args) entries.push_back(entry(key, value));
  const amqp_table_t args{static_cast<int>(entries.size()), entries.data()};
  const auto* ok = amqp_queue_declare(c.get(), channel, amqp_cstring_bytes(o.queue.c_str()), 0,
                                      /*durable=*/o.queue_type != "transient", 0, 0, args);
  c.rpc_ok("queue.declare " + o.queue);
  return ok->message_count;
}

using clock_type = std::chrono::steady_clock;

/// Prints the one result line; `extra` ("key=value ...") goes after the rate. first_us and last_us:
/// start and end on the wall clock (µs since the epoch), to read other processes' figures over the
/// same span (the benchmark suite's broker CPU).
inline void report(const char* what, std::uint64_t count, std::size_t size, clock_type::time_point start,
                   clock_type::time_point end, const std::string& extra = "") {
  const double seconds = std::chrono::duration<double>(end - start).count();
  auto wall_us = [now = clock_type::now(),
                  wall = std::chrono::system_clock::now()](clock_type::time_point t) {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::microseconds>((wall - (now - t)).time_since_epoch()).count());
  };
  std::printf("raw %s count=%llu size=%zu seconds=%.3f rate=%.0f msg/s first_us=%lld last_us=%lld%s%s\n",
              what, static_cast<unsigned long long>(count), size, seconds,
              seconds > 0 ? static_cast<double>(count) / seconds : 0.0, wall_us(start), wall_us(end),
              extra.empty() ? "" : " ", extra.c_str());
  std::fflush(stdout);
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

/// Milliseconds-to-percentile helper for RTT lists (sorted in place).
inline std::int64_t percentile(std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, std::size_t(p * double(sorted.size())))];
}

void rpc(const options& o);

}  // namespace dde::raw
