// https and wss on dde's own server and clients: certificates from deploy/gen-ca.sh,
// a wrong CA, a missing client certificate and plain ws:// to a TLS port. No broker.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fstream>
#include <future>
#include <thread>

#include "dde/net/http_client.hpp"
#include "dde/net/ws.hpp"
#include "first_outcome.hpp"
#include "tls_server.hpp"

namespace dde::test {
namespace {

/// Echoes every message; reports the first open and the first message.
class echo : public net::ws_handler {
 public:
  void on_open(const std::shared_ptr<net::ws_connection>&) override {}
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override {
    conn->send(std::move(data), binary);
  }
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string&) override {}
};

/// A client that sends "ping" once open and records how the connection went: "echo:ping" or
/// "fail:<reason>".
class probe : public net::ws_handler, public first_outcome {
 public:
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override { conn->send("ping", false); }
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) override {
    settle("echo:" + data);
    conn->close("done");
  }
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string& reason) override {
    settle("fail:closed before the echo: " + reason);
  }
};

/// A client that sends one message of `size` bytes once open and records why the connection ended.
class oversize : public net::ws_handler, public first_outcome {
 public:
  explicit oversize(std::size_t size) : size_(size) {}
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    conn->send(std::string(size_, 'z'), true);
  }
  void on_message(const std::shared_ptr<net::ws_connection>&, std::string, bool) override {}
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string& reason) override {
    settle(reason);
  }

 private:
  std::size_t size_;
};

/// A server side that stops reading each connection as it opens (backpressure, as the MQS does when
/// its enqueue backlog is full) and echoes once reading again.
class pauser : public net::ws_handler {
 public:
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    conn->pause_reading(true);
    opened_.set_value(conn);
  }
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override {
    conn->send(std::move(data), binary);
  }
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string&) override {}
  std::future<std::shared_ptr<net::ws_connection>> opened() { return opened_.get_future(); }

 private:
  std::promise<std::shared_ptr<net::ws_connection>> opened_;
};

/// A client that sends nothing until told, and records the first echo or why it closed.
class quiet : public net::ws_handler, public first_outcome {
 public:
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override { opened_.set_value(conn); }
  void on_message(const std::shared_ptr<net::ws_connection>&, std::string data, bool) override {
    settle("echo:" + data);
  }
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string& reason) override {
    settle("closed: " + reason);
  }
  std::future<std::shared_ptr<net::ws_connection>> opened() { return opened_.get_future(); }

 private:
  std::promise<std::shared_ptr<net::ws_connection>> opened_;
};

/// A server side that reads slowly: after each message it stops reading for `pause` (shorter than a
/// heartbeat), until hurried; it answers nothing but "last", which it echoes.
class slow_reader : public net::ws_handler {
 public:
  slow_reader(boost::asio::io_context& io, std::chrono::milliseconds pause) : timer_(io), pause_(pause) {}
  void on_open(const std::shared_ptr<net::ws_connection>&) override {}
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override {
    read_.fetch_add(1);
    if (data == "last") return conn->send(std::move(data), binary);
    if (hurried_.load()) return;
    conn->pause_reading(true);
    timer_.expires_after(pause_);
    timer_.async_wait([conn](const boost::system::error_code& ec) {
      if (ec != boost::asio::error::operation_aborted) conn->pause_reading(false);  // else: re-armed
    });
  }
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string&) override {}
  /// Messages read so far.
  std::size_t read() const { return read_.load(); }
  /// Reads at full speed from the next message on.
  void hurry() { hurried_.store(true); }

 private:
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds pause_;
  std::atomic<std::size_t> read_{0};
  std::atomic<bool> hurried_{false};
};

class TlsTransport : public ::testing::Test {
 protected:
  /// Short, so that outliving it takes a few seconds; heartbeats go every quarter of it.
  static constexpr std::chrono::milliseconds idle_timeout{4000};

  static void SetUpTestSuite() {
    auto dir = fresh_dir("tls_transport");
    certs_ = new cluster_certificates(make_cluster_certificates(dir / "good", {"server", "client"}));
    others_ = new cluster_certificates(make_cluster_certificates(dir / "other", {"client"}));
  }
  static void TearDownTestSuite() {
    delete certs_;
    delete others_;
  }

  void SetUp() override {
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    server_.reset();
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  net::tls_options server_tls(bool verify_client) {
    return {certs_->cert("server"), certs_->key("server"), certs_->ca(), verify_client};
  }

  std::uint16_t start_server(net::tls_options tls, std::size_t max_ws_message = 16 * 1024 * 1024) {
    net::server_options o;
    o.tls = std::move(tls);
    o.max_ws_message = max_ws_message;
    server_ = net::server::create(io_, o);
    server_->add_websocket("/echo", std::make_shared<echo>());
    server_->set_http([](const net::http_request& req) {
      net::http_response r;
      r.body = R"({"target": ")" + req.target + R"("})";
      return r;
    });
    EXPECT_FALSE(server_->start());
    return server_->port();
  }

  /// Connects to `url` with `tls` and returns the outcome (echo or failure).
  std::string exchange(const std::string& url, net::tls_options tls) {
    auto parsed = net::parse_ws_url(url);
    EXPECT_TRUE(parsed) << url;
    auto p = std::make_shared<probe>();
    auto outcome = p->outcome();
    net::client_options o;
    o.tls = std::move(tls);
    net::ws_connect(
        io_, *parsed, p, [p](const std::string& why) { p->settle("fail:" + why); }, o);
    if (outcome.wait_for(30s) != std::future_status::ready) return "timeout";
    return outcome.get();
  }

  /// A plain server (short idle timeout) whose one WebSocket path `server_side` handles, and a
  /// `quiet` client of it, connected: the futures of the client's connection and of its outcome.
  std::pair<std::future<std::shared_ptr<net::ws_connection>>, std::future<std::string>> quiet_client_of(
      std::shared_ptr<net::ws_handler> server_side) {
    net::server_options so;
    so.ws_idle_timeout = idle_timeout;
    server_ = net::server::create(io_, so);
    server_->add_websocket("/link", std::move(server_side));
    EXPECT_FALSE(server_->start());
    auto client = std::make_shared<quiet>();
    auto opened = client->opened();
    auto outcome = client->outcome();
    net::client_options co;
    co.ws_idle_timeout = idle_timeout;
    net::ws_connect(
        io_, *net::parse_ws_url("ws://127.0.0.1:" + std::to_string(server_->port()) + "/link"), client,
        [client](const std::string& why) { client->settle("fail:" + why); }, co);
    return {std::move(opened), std::move(outcome)};
  }

  std::string wss(std::uint16_t port) { return "wss://127.0.0.1:" + std::to_string(port) + "/echo"; }

  static cluster_certificates* certs_;
  static cluster_certificates* others_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_{
      io_.get_executor()};
  std::thread thread_;
  std::unique_ptr<net::server> server_;
};

cluster_certificates* TlsTransport::certs_ = nullptr;
cluster_certificates* TlsTransport::others_ = nullptr;

TEST(TlsUrls, WssUrlsParseWithPort443ByDefault) {
  auto u = net::parse_ws_url("wss://example.org/mqs");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->path, "/mqs");
  auto plain = net::parse_ws_url("ws://example.org:8000/registry");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(net::parse_ws_url_list("wss://a:1/x,ws://b:2/y").size(), 2u);
}

TEST_F(TlsTransport, WssEchoesAndHttpsAnswersWithTheRightCa) {
  auto port = start_server(server_tls(false));
  EXPECT_EQ(exchange(wss(port), {"", "", certs_->ca(), false}), "echo:ping");
  net::http_options h;
  h.ca_file = certs_->ca();
  auto res = net::http_fetch("GET", "https://127.0.0.1:" + std::to_string(port) + "/hello", {}, {}, h);
  ASSERT_TRUE(res.answered()) << res.error;
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, R"({"target": "/hello"})");
}

TEST_F(TlsTransport, AClientWithTheWrongCaIsRefusedWithTheReason) {
  auto port = start_server(server_tls(false));
  auto outcome = exchange(wss(port), {"", "", others_->ca(), false});
  EXPECT_NE(outcome.find("fail:TLS handshake with 127.0.0.1:" + std::to_string(port) + " failed"),
            std::string::npos)
      << outcome;
  EXPECT_NE(outcome.find("certificate"), std::string::npos) << outcome;
  net::http_options h;
  h.ca_file = others_->ca();
  auto res = net::http_fetch("GET", "https://127.0.0.1:" + std::to_string(port) + "/", {}, {}, h);
  EXPECT_FALSE(res.answered());
  EXPECT_NE(res.error.find("certificate verify failed"), std::string::npos) << res.error;
}

TEST_F(TlsTransport, VerifyClientRefusesClientsWithoutACertificateOfItsCa) {
  auto port = start_server(server_tls(true));
  EXPECT_EQ(exchange(wss(port), {certs_->cert("client"), certs_->key("client"), certs_->ca(), false}),
            "echo:ping");
  EXPECT_EQ(exchange(wss(port), {"", "", certs_->ca(), false}).rfind("fail:", 0), 0u);
  EXPECT_EQ(exchange(wss(port), {others_->cert("client"), others_->key("client"), certs_->ca(), false})
                .rfind("fail:", 0),
            0u);
  net::http_options h;
  h.ca_file = certs_->ca();
  auto url = "https://127.0.0.1:" + std::to_string(port) + "/x";
  EXPECT_FALSE(net::http_fetch("GET", url, {}, {}, h).answered());
  h.cert_file = certs_->cert("client");
  h.key_file = certs_->key("client");
  auto res = net::http_fetch("GET", url, {}, {}, h);
  ASSERT_TRUE(res.answered()) << res.error;
  EXPECT_EQ(res.status, 200);
}

TEST_F(TlsTransport, PlainWsToATlsPortFailsAndTheServerKeepsServing) {
  auto port = start_server(server_tls(false));
  auto outcome = exchange("ws://127.0.0.1:" + std::to_string(port) + "/echo", {});
  EXPECT_EQ(outcome.rfind("fail:", 0), 0u) << outcome;
  auto plain_http = net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(port) + "/", {}, {}, 10s);
  EXPECT_TRUE(!plain_http.answered() || plain_http.status != 200);
  EXPECT_EQ(exchange(wss(port), {"", "", certs_->ca(), false}), "echo:ping");
}

/// The "Threads:" line of /proc/self/status.
int threads_of_this_process() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

TEST_F(TlsTransport, AnHttpFetchOfAnAddressStartsNoResolverThreadWhileANameIsStillResolved) {
  net::server_options o;
  server_ = net::server::create(io_, o);
  // The handler runs while the client waits for its answer: it counts the client's threads too.
  server_->set_http([](const net::http_request&) {
    net::http_response r;
    r.body = std::to_string(threads_of_this_process());
    return r;
  });
  ASSERT_FALSE(server_->start());
  auto port = std::to_string(server_->port());
  auto before = threads_of_this_process();
  auto by_address = net::http_fetch("GET", "http://127.0.0.1:" + port + "/", "", {}, 10s);
  ASSERT_EQ(by_address.status, 200) << by_address.error;
  EXPECT_EQ(std::stoi(by_address.body), before) << "a call to an address started a thread";
  auto by_name = net::http_fetch("GET", "http://localhost:" + port + "/", "", {}, 10s);
  ASSERT_EQ(by_name.status, 200) << by_name.error;
  EXPECT_GT(std::stoi(by_name.body), before)
      << "a name goes through asio's resolver (its thread): the count sees it";
}

TEST_F(TlsTransport, PlainServersStillServeWs) {
  auto port = start_server({});
  EXPECT_EQ(exchange("ws://127.0.0.1:" + std::to_string(port) + "/echo", {}), "echo:ping");
  EXPECT_EQ(exchange(wss(port), {"", "", certs_->ca(), false}).rfind("fail:", 0), 0u);
}

TEST_F(TlsTransport, AMessageOverTheLimitIsRefusedWith1009AndThePeerReadsWhyWhileStillWriting) {
  // The server drains the rest of the message in the close handshake; a reset instead (Beast's own
  // limit, whose teardown stops after one read) lost the close frame of a peer still writing.
  for (bool tls : {false, true}) {
    auto port = start_server(tls ? server_tls(false) : net::tls_options{}, 64 * 1024);
    auto url = (tls ? wss(port) : "ws://127.0.0.1:" + std::to_string(port) + "/echo");
    for (int i = 0; i < 5; ++i) {
      auto client = std::make_shared<oversize>(4 * 1024 * 1024);  // 64 times the limit
      auto outcome = client->outcome();
      net::client_options o;
      if (tls) o.tls = {"", "", certs_->ca(), false};
      net::ws_connect(
          io_, *net::parse_ws_url(url), client,
          [client](const std::string& why) { client->settle("fail:" + why); }, o);
      ASSERT_EQ(outcome.wait_for(30s), std::future_status::ready);
      EXPECT_EQ(outcome.get(), "closed by peer: a message over 65536 bytes")
          << (tls ? "wss" : "ws") << " try " << i;
    }
    server_->stop();
  }
}

TEST_F(TlsTransport, APeerWhoseReadsArePausedLongerThanTheIdleTimeoutIsNotTakenForGone) {
  // A host sending nothing back reads only pongs; while the MQS does not read (its backlog full),
  // no pong comes, and the host's idle timer closed the link and lost what it had sent.
  auto paused = std::make_shared<pauser>();
  auto server_side = paused->opened();
  auto [client_side, outcome] = quiet_client_of(paused);
  ASSERT_EQ(server_side.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(client_side.wait_for(30s), std::future_status::ready);
  auto server_conn = server_side.get();
  auto client_conn = client_side.get();
  // Three idle timeouts: the link must still be up.
  ASSERT_EQ(outcome.wait_for(3 * idle_timeout), std::future_status::timeout) << outcome.get();
  server_conn->pause_reading(false);
  client_conn->send("still here", false);
  ASSERT_EQ(outcome.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(outcome.get(), "echo:still here");
}

TEST_F(TlsTransport, APeerThatReadsSlowlyAndAnswersNothingIsNotTakenForGone) {
  // The MQS reading a producing host at the broker's pace (backlog full, pauses shorter than a
  // heartbeat): the host hears nothing but pongs, and its ping waits behind the megabytes it sent.
  // Without the MQS's own heartbeat the host closed the link after its idle timeout and lost what
  // it had queued (Backbone.StoppingAProducerHostHandsOverEveryAtMostOnceMessageItSent).
  auto reader = std::make_shared<slow_reader>(io_, idle_timeout / 40);
  auto [client_side, outcome] = quiet_client_of(reader);
  ASSERT_EQ(client_side.wait_for(30s), std::future_status::ready);
  auto conn = client_side.get();
  // Text messages are not coalesced: the reader takes about two 1 KiB messages a pause, and what
  // fills the socket buffers ahead of a ping takes longer than an idle timeout to read.
  for (int i = 0; i < 20000; ++i) conn->send(std::string(1024, 'x'), false);
  ASSERT_EQ(outcome.wait_for(3 * idle_timeout), std::future_status::timeout) << outcome.get();
  EXPECT_GT(reader->read(), 0u);
  reader->hurry();
  conn->send("last", false);
  ASSERT_EQ(outcome.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(outcome.get(), "echo:last");
  EXPECT_EQ(reader->read(), 20001u);
}

TEST_F(TlsTransport, UnusableCertificateFilesAreAPreciseStartupError) {
  net::server_options o;
  o.tls = {certs_->dir / "missing.pem", certs_->key("server"), "", false};
  try {
    net::server::create(io_, o);
    FAIL() << "no error for a missing certificate";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()), "cannot use TLS certificate " + (certs_->dir / "missing.pem").string() +
                                         ": No such file or directory");
  }
  o.tls = {certs_->cert("server"), certs_->key("client"), "", false};
  EXPECT_THROW(net::server::create(io_, o), std::runtime_error);
}

}  // namespace
}  // namespace dde::test
