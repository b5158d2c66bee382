#include "dde/registry/ctl_ask.hpp"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "ctl_requests.hpp"
#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "dde/net/auth.hpp"
#include "dde/net/http_client.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/registry/ctl_commands.hpp"
#include "dde/wire/record.hpp"

namespace dde::ctl {
namespace {

using json = nlohmann::json;

/// One connection to the MQS: hello, pull the reply queue, enqueue the ask; ends at the reply.
class ask_session : public net::ws_handler {
 public:
  ask_session(boost::asio::io_context& io, ask_call call, std::chrono::milliseconds timeout)
      : io_(io),
        call_(std::move(call)),
        instance_(new_uuid()),
        message_id_(new_uuid()),
        timer_(io),
        timeout_(timeout) {}

  void start(const net::ws_url& url, const std::shared_ptr<ask_session>& self) {
    timer_.expires_after(timeout_);
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (ec) return;
      self->finish(1, "no reply from " + self->call_.to + " within " +
                          std::to_string(self->timeout_.count()) +
                          " ms (is the pool deployed, and does its worker reply?)");
    });
    net::ws_connect(
        io_, url, self,
        [self](const std::string& reason) {
          self->finish(3, "cannot reach the MQS at " + self->call_.mqs + ": " + reason);
        },
        net::cluster_link_options());
  }

  const ask_outcome& outcome() const { return outcome_; }

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    conn_ = conn;
    if (finished_) return conn->close("done");
    envelope e;
    e.id = message_id_;
    e.from = "ddectl/ask";
    e.to = call_.to;
    e.ask_instance = instance_;
    e.ask_worker = "ddectl";
    e.body = json::parse(call_.body);
    std::string batch;
    mqs::append(batch, mqs::hello_request{wire::protocol_version, "ddectl", instance_});
    mqs::append(batch, mqs::pull_request{reply_topic(instance_), delivery_mode::reply, 1, 0, 0, {}});
    auto topic = parse_address(call_.to)->topic();
    auto split = split_envelope(e, topic);
    auto mode = parse_delivery_mode(call_.mode).value_or(delivery_mode::at_least_once);
    mqs::append_enqueue(batch, topic, mode,
                        mode == delivery_mode::at_least_once ? std::optional<std::uint64_t>(1) : std::nullopt,
                        split.props, split.payload);
    conn->send(std::move(batch), true);
  }

  void on_message(const std::shared_ptr<net::ws_connection>&, std::string data, bool binary) override {
    if (!binary) return finish(1, "the MQS answered: " + data);
    for (auto& r : wire::decode_batch(data, std::size_t(1) << 30).records) {
      auto record = mqs::parse_mqs_record(r.header);
      if (!record) continue;
      if (auto* error = std::get_if<mqs::error_record>(&record.value()))
        return finish(1, "the MQS refused the message: " + error->error);
      if (auto* reject = std::get_if<mqs::reject_record>(&record.value()))
        return finish(1, "the MQS refused the message: " + reject->error);
      auto* deliver = std::get_if<mqs::deliver_record>(&record.value());
      if (!deliver || deliver->topic != reply_topic(instance_)) continue;
      auto reply = join_envelope(deliver->props.view(), deliver->topic, std::move(r.body));
      if (reply.in_reply_to != message_id_) continue;
      return finish(0, reply.is_bytes ? reply.bytes : reply.body.dump(2));
    }
  }

  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string& reason) override {
    conn_.reset();
    finish(3, "the MQS closed the connection: " + reason);
  }

 private:
  /// Records the first outcome and ends the connection; the io_context then runs out of work.
  void finish(int status, std::string text) {
    if (!finished_) {
      finished_ = true;
      outcome_ = {status, std::move(text)};
    }
    if (conn_) {
      auto conn = std::move(conn_);
      conn->close("done");
      // A peer that never answers the close must not keep ddectl waiting.
      timer_.expires_after(std::chrono::seconds(2));
      timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) io_.stop();
      });
    } else {
      io_.stop();
    }
  }

  boost::asio::io_context& io_;
  ask_call call_;
  std::string instance_;
  std::string message_id_;
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<net::ws_connection> conn_;
  bool finished_ = false;
  ask_outcome outcome_;
};

}  // namespace

ask_outcome resolve_pool(ask_call& call, const registry_access& registry, std::chrono::milliseconds timeout) {
  auto get = [&](const std::string& path, json& out) -> ask_outcome {
    auto res = net::http_fetch("GET", registry.url + path, "", registry.headers, timeout);
    if (!res.answered())
      return {3, "cannot reach the registry at " + registry.url + " to find pool " + call.to + ": " +
                     res.error + " (--no-registry asks without it)"};
    if (res.status >= 300)
      return {1, "the registry answered GET " + path + " with HTTP " + std::to_string(res.status) + ": " +
                     registry_error_text(res.body)};
    out = json::parse(res.body, nullptr, false);
    if (out.is_discarded())
      return {1, "the registry answered GET " + path + " with something other than JSON"};
    return {0, {}};
  };
  json nodes;
  if (auto r = get("/registry/system/list", nodes); r.status != 0) return r;
  if (!nodes.is_array())
    return {1, "the registry answered GET /registry/system/list with something other than a list"};
  std::string unanswered;
  for (auto& node : nodes) {
    auto id = node.is_object() ? node.value("bootstrapperId", std::string()) : std::string();
    if (id.empty()) continue;
    json described;
    if (auto r = get("/registry/system/" + id, described); r.status != 0) {
      unanswered += "; node " + id + " did not say what it runs (" + r.text + ")";
      continue;
    }
    if (!described.is_object()) continue;
    for (auto& [system, pools] : described.items()) {
      if (!pools.is_array()) continue;
      for (auto& pool : pools) {
        if (!pool.is_object() || pool.value("id", std::string()) != call.to) continue;
        auto mode = pool.value("deliveryMode", std::string("at-least-once"));
        if (!call.mode.empty() && call.mode != mode)
          return {1, fmt::format("pool {} is {} (on node {}), not {}; leave --mode out", call.to, mode, id,
                                 call.mode)};
        call.mode = mode;
        if (call.mqs.empty()) call.mqs = pool.value("messageQueuingSystemServer", std::string());
        if (call.mqs.empty())
          return {1, "the registry does not say which MQS pool " + call.to + " uses; give --mqs"};
        return {0, {}};
      }
    }
  }
  return {1,
          "no pool " + call.to + " is deployed on the " + std::to_string(nodes.size()) +
              " node(s) the registry knows; nothing was sent (ddectl list and ddectl show ID list the pools; "
              "--no-registry sends anyway)" +
              unanswered};
}

ask_outcome run_ask(const ask_call& call, std::chrono::milliseconds timeout) {
  auto url = net::parse_ws_url(call.mqs);
  if (!url) return {2, "--mqs must be a ws://host:port/path URL, got \"" + call.mqs + "\""};
  boost::asio::io_context io(1);
  auto session = std::make_shared<ask_session>(io, call, timeout);
  session->start(*url, session);
  io.run();
  return session->outcome();
}

std::string choose_registry(const std::string& list, const std::map<std::string, std::string>& headers,
                            std::chrono::milliseconds timeout) {
  if (list.find(',') == std::string::npos) return list;
  std::vector<std::string> urls;
  try {
    urls = detail::split_list(list);
  } catch (const detail::usage_error&) {
    return list;  // only commas: reaching it fails with the list named
  }
  std::string answered;
  for (auto& url : urls) {
    auto res = net::http_fetch("GET", url + "/registry/health", "", headers, timeout);
    if (res.answered() && res.status == 200) return url;
    if (res.answered() && answered.empty()) answered = url;
  }
  return answered.empty() ? urls.front() : answered;
}

}  // namespace dde::ctl
