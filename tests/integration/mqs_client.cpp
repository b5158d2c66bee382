#include "mqs_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <stdexcept>
#include <thread>

#include "dde/names.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/wire/fast_json.hpp"

namespace dde::mqs::test {
namespace {

/// A batch's records as decode_batch reads them, a binary `deliver` header (mqs/PROTOCOL.md *Binary
/// deliver*) read as the JSON header of the same delivery plus `"binary": true`. Stops at the first
/// bad record.
std::vector<wire::record> decode_records(std::string_view data) {
  std::vector<wire::record> out;
  for (auto& f : wire::split_batch(data, std::size_t(1) << 30).records) {
    wire::record r;
    r.body = std::string(f.body);
    if (!f.header.empty() && f.header.front() == binary_deliver_mark) {
      auto d = parse_binary_deliver(f.header);
      if (!d) break;
      // The same delivery as the MQS writes it in JSON, then read as any other header.
      auto props = d->props;
      props.published_us = d->published_us;
      std::string as_json;
      append_deliver(as_json, d->topic, d->tag, d->redelivered, {}, props);
      r.header = wire::parse_json(wire::split_batch(as_json, as_json.size()).records.at(0).header);
      r.header["binary"] = true;
    } else {
      r.header = wire::parse_json(f.header);
      if (!r.header.is_object()) break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = boost::asio::ip::tcp;

struct mqs_client::impl : std::enable_shared_from_this<mqs_client::impl> {
  boost::asio::io_context io;
  websocket::stream<beast::tcp_stream> ws{boost::asio::make_strand(io)};
  beast::flat_buffer buffer;
  std::deque<std::pair<std::string, bool>> out;
  bool writing = false;
  std::thread thread;

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<wire::record> received;
  std::vector<std::string> text;
  std::function<bool(const wire::record&)> hook;
  std::function<void(std::vector<wire::record>&)> batch_hook;
  bool is_closed = false;
  int code = 0;

  void do_read() {
    ws.async_read(buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        std::lock_guard lock(self->mutex);
        self->is_closed = true;
        self->code = self->ws.reason().code;
        self->changed.notify_all();
        return;
      }
      std::string data = beast::buffers_to_string(self->buffer.data());
      self->buffer.consume(self->buffer.size());
      bool binary = self->ws.got_binary();
      if (binary) {
        auto records = decode_records(data);
        std::lock_guard lock(self->mutex);
        if (self->batch_hook) self->batch_hook(records);
        for (auto& r : records)
          if (!self->hook || self->hook(r)) self->received.push_back(std::move(r));
      } else {
        std::lock_guard lock(self->mutex);
        self->text.push_back(std::move(data));
      }
      self->changed.notify_all();
      self->do_read();
    });
  }

  void enqueue_write(std::string data, bool binary) {
    boost::asio::post(ws.get_executor(),
                      [self = shared_from_this(), data = std::move(data), binary]() mutable {
                        self->out.emplace_back(std::move(data), binary);
                        self->do_write();
                      });
  }

  void do_write() {
    if (writing || out.empty()) return;
    writing = true;
    ws.binary(out.front().second);
    ws.async_write(boost::asio::buffer(out.front().first),
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     self->writing = false;
                     self->out.pop_front();
                     if (ec) {
                       self->out.clear();
                       return;
                     }
                     self->do_write();
                   });
  }
};

mqs_client::mqs_client(std::uint16_t port, std::size_t max_message) : impl_(std::make_shared<impl>()) {
  tcp::resolver resolver(impl_->io);
  auto results = resolver.resolve("127.0.0.1", std::to_string(port));
  beast::get_lowest_layer(impl_->ws).expires_after(std::chrono::seconds(5));
  beast::get_lowest_layer(impl_->ws).connect(results);
  beast::get_lowest_layer(impl_->ws).expires_never();
  beast::get_lowest_layer(impl_->ws).socket().set_option(tcp::no_delay(true));
  impl_->ws.read_message_max(max_message);
  beast::error_code ec;
  impl_->ws.handshake("127.0.0.1:" + std::to_string(port), "/mqs", ec);
  if (ec) throw std::runtime_error("WebSocket handshake with the MQS failed: " + ec.message());
  impl_->do_read();
  impl_->thread = std::thread([i = impl_] { i->io.run(); });
}

mqs_client::~mqs_client() {
  drop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void mqs_client::send(std::string data) { impl_->enqueue_write(std::move(data), true); }
void mqs_client::send_text(std::string text) { impl_->enqueue_write(std::move(text), false); }

void mqs_client::send_record(const nlohmann::json& header, std::string_view body) {
  std::string out;
  wire::append_record(out, header, body);
  send(std::move(out));
}

bool mqs_client::hello(const std::string& system, std::chrono::milliseconds timeout, bool binary_deliver) {
  nlohmann::json h{{"action", "hello"},
                   {"protocol", wire::protocol_version},
                   {"system", system},
                   {"instance", new_uuid()}};
  if (binary_deliver) h["deliver"] = "binary";
  send_record(h);
  return wait_for([&] { return count("welcome") > 0; }, timeout);
}

void mqs_client::enqueue(const std::string& topic, const std::string& mode, std::optional<std::uint64_t> seq,
                         std::string_view body) {
  nlohmann::json h{{"action", "enqueue"}, {"topic", topic}, {"mode", mode}};
  if (seq) h["seq"] = *seq;
  send_record(h, body);
}

void mqs_client::pull(const std::string& topic, const std::string& mode, std::uint32_t credit,
                      std::uint32_t consumers) {
  nlohmann::json r{{"action", "pull"}, {"topic", topic}, {"mode", mode}, {"credit", credit}};
  if (consumers) r["consumers"] = consumers;
  send_record(r);
}

void mqs_client::ack(const std::vector<std::uint64_t>& tags) {
  send_record({{"action", "ack"}, {"tags", tags}});
}

void mqs_client::nack(const std::vector<std::uint64_t>& tags, bool requeue) {
  send_record({{"action", "nack"}, {"tags", tags}, {"requeue", requeue}});
}

void mqs_client::on_record(std::function<bool(const wire::record&)> hook) {
  std::lock_guard lock(impl_->mutex);
  impl_->hook = std::move(hook);
}

void mqs_client::on_batch(std::function<void(std::vector<wire::record>&)> hook) {
  std::lock_guard lock(impl_->mutex);
  impl_->batch_hook = std::move(hook);
}

bool mqs_client::wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  // `condition` may call the snapshot accessors, which lock: so poll it without holding the lock,
  // waking on every change.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    std::unique_lock lock(impl_->mutex);
    if (impl_->changed.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + 50ms)) ==
            std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline) {
      lock.unlock();
      return condition();
    }
  }
}

std::vector<wire::record> mqs_client::records() {
  std::lock_guard lock(impl_->mutex);
  return impl_->received;
}

std::vector<wire::record> mqs_client::records(const std::string& action) {
  std::lock_guard lock(impl_->mutex);
  std::vector<wire::record> out;
  for (auto& r : impl_->received)
    if (r.header.value("action", "") == action) out.push_back(r);
  return out;
}

std::size_t mqs_client::count(const std::string& action) {
  std::lock_guard lock(impl_->mutex);
  std::size_t n = 0;
  for (auto& r : impl_->received)
    if (r.header.value("action", "") == action) ++n;
  return n;
}

std::vector<std::string> mqs_client::texts() {
  std::lock_guard lock(impl_->mutex);
  return impl_->text;
}

std::vector<std::uint64_t> mqs_client::confirmed_seqs() {
  std::vector<std::uint64_t> out;
  for (auto& r : records("confirm"))
    for (auto& s : r.header["seqs"]) out.push_back(s.get<std::uint64_t>());
  return out;
}

std::vector<std::uint64_t> mqs_client::rejected_seqs() {
  std::vector<std::uint64_t> out;
  for (auto& r : records("reject"))
    for (auto& s : r.header["seqs"]) out.push_back(s.get<std::uint64_t>());
  return out;
}

bool mqs_client::closed() {
  std::lock_guard lock(impl_->mutex);
  return impl_->is_closed;
}

int mqs_client::close_code() {
  std::lock_guard lock(impl_->mutex);
  return impl_->code;
}

void mqs_client::close() {
  boost::asio::post(impl_->ws.get_executor(), [i = impl_] {
    i->ws.async_close(websocket::close_code::normal, [i](beast::error_code) {});
  });
  wait_for([&] { return closed(); }, 5s);
}

void mqs_client::drop() {
  boost::asio::post(impl_->ws.get_executor(), [i = impl_] {
    beast::error_code ec;
    beast::get_lowest_layer(i->ws).socket().close(ec);
  });
  wait_for([&] { return closed(); }, 5s);
  impl_->io.stop();
}

}  // namespace dde::mqs::test
