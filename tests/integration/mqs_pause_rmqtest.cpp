// Pool-wide pauses through dde-mqs: two real MQS processes on one real broker, hosts driven over
// WebSocket by mqs_client, and the host's own top level.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <mutex>
#include <thread>

#include "dde/names.hpp"
#include "dde_test.hpp"
#include "mqs_client.hpp"
#include "mqs_process.hpp"
#include "top_level.hpp"

namespace dde::mqs::test {
namespace {

using dde::test::rabbitmq_node;
using dde::test::shared_broker;
using dde::test::wait_until;

constexpr const char* consuming_pauses = "consuming pauses from dde.governance";

/// The MQS this client talks to (from its welcome).
std::string mqs_id_of(mqs_client& c) {
  return c.records("welcome").at(0).header.at("mqs").get<std::string>();
}

void pull(mqs_client& c, const std::string& topic) { c.pull(topic, "at-most-once", 1); }

void pause(mqs_client& c, const std::string& topic, int ms, const std::string& reason) {
  c.send_record({{"action", "pause"}, {"topic", topic}, {"ms", ms}, {"reason", reason}});
}

std::vector<wire::record> pauses_of(mqs_client& c, const std::string& topic) {
  std::vector<wire::record> out;
  for (auto& r : c.records("pause"))
    if (r.header.at("topic") == topic) out.push_back(r);
  return out;
}

/// Waits until each MQS publishes to and consumes from the broker (`times` connections so far):
/// an MQS without a broker connection tells only its own hosts.
bool broker_ready(std::initializer_list<mqs_process*> mqs, std::size_t times = 1) {
  for (auto* m : mqs)
    if (!wait_until(
            [&] { return m->log_count(consuming_pauses) >= times && m->log_count("(publishing)") >= times; },
            60s))
      return false;
  return true;
}

TEST(MqsPause, APauseReachesEveryHostPullingItsTopicOnEitherMqsAndNoOther) {
  auto& broker = shared_broker();
  mqs_process mqs1(broker), mqs2(broker);
  ASSERT_TRUE(broker_ready({&mqs1, &mqs2})) << mqs1.log() << mqs2.log();
  auto t = unique_topic("paused"), u = unique_topic("other");
  mqs_client a(mqs1.port()), b(mqs2.port()), c(mqs2.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(b.hello("b"));
  ASSERT_TRUE(c.hello("c"));
  pull(a, t);
  pull(b, t);
  pull(c, u);
  // Had a pull not been handled yet when the pause came, the MQS would tell it on that pull.
  pause(a, t, 2000, "429 from api");
  ASSERT_TRUE(a.wait_for([&] { return !pauses_of(a, t).empty(); }, 20s)) << mqs1.log();
  ASSERT_TRUE(b.wait_for([&] { return !pauses_of(b, t).empty(); }, 20s)) << mqs2.log();
  for (auto* host : {&a, &b}) {
    auto p = pauses_of(*host, t).at(0).header;
    EXPECT_GT(p.at("ms").get<std::int64_t>(), 0) << p.dump();
    EXPECT_LE(p.at("ms").get<std::int64_t>(), 2000) << p.dump();
    EXPECT_EQ(p.at("reason"), "429 from api");
    EXPECT_EQ(p.at("origin").get<std::string>().rfind(mqs_id_of(a) + "/", 0), 0u) << p.dump();
  }

  // A marker after it: the first pause C hears of is the marker, so it heard nothing of `t`.
  pause(a, u, 1500, "marker");
  ASSERT_TRUE(c.wait_for([&] { return c.count("pause") >= 1; }, 20s)) << mqs2.log();
  auto first = c.records("pause").at(0).header;
  EXPECT_EQ(first.at("topic"), u);
  EXPECT_EQ(first.at("reason"), "marker");

  // B asks for longer: A hears of it through the broker. MQS 1's own broadcast of the first pause
  // reached its queue before B even heard of it, and was skipped: A heard exactly these two.
  pause(b, t, 2500, "429 again");
  ASSERT_TRUE(a.wait_for([&] { return pauses_of(a, t).size() >= 2; }, 20s)) << mqs1.log();
  auto second = pauses_of(a, t).at(1).header;
  EXPECT_EQ(second.at("reason"), "429 again");
  EXPECT_EQ(second.at("origin").get<std::string>().rfind(mqs_id_of(b) + "/", 0), 0u) << second.dump();
  EXPECT_LE(second.at("ms").get<std::int64_t>(), 2500);
  EXPECT_TRUE(a.records("error").empty());
  EXPECT_EQ(pauses_of(c, t).size(), 0u);
  for (auto* host : {&a, &b, &c}) host->close();
  for (auto& q : {t, u}) broker.delete_queue(q);
}

bool has_error(mqs_client& c, const std::string& text) {
  for (auto& r : c.records("error"))
    if (r.header.value("error", "").find(text) != std::string::npos && r.header.contains("record") &&
        r.header.contains("header"))
      return true;
  return false;
}

TEST(MqsPause, BadPausesGetPreciseErrorsAndTheMqsGoesOnServing) {
  auto& broker = shared_broker();
  mqs_process mqs(broker);
  auto t = unique_topic("badpause");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  pull(c, t);
  c.send_record({{"action", "pause"}, {"ms", 100}});
  c.send_record({{"action", "pause"}, {"topic", "no dots"}, {"ms", 100}});
  c.send_record({{"action", "pause"}, {"topic", t}, {"ms", 0}});
  c.send_record({{"action", "pause"}, {"topic", t}, {"ms", 3600001}});
  c.send_record({{"action", "pause"}, {"topic", t}, {"ms", "100"}});
  c.send_record({{"action", "pause"}, {"topic", t}, {"ms", 100}, {"reason", std::string(1001, 'r')}});
  pause(c, t, 1000, "fine");
  ASSERT_TRUE(c.wait_for([&] { return c.count("pause") >= 1 && c.count("error") >= 6; }, 20s)) << mqs.log();
  EXPECT_TRUE(has_error(c, "missing field \"topic\""));
  EXPECT_TRUE(has_error(c, "invalid topic \"no dots\""));
  EXPECT_TRUE(has_error(c, "ms 0 is out of range 1..3600000"));
  EXPECT_TRUE(has_error(c, "ms 3600001 is out of range"));
  EXPECT_TRUE(has_error(c, "field \"ms\" must be a whole number"));
  EXPECT_TRUE(has_error(c, "reason of 1001 characters exceeds 1000"));
  auto p = c.records("pause");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].header.at("reason"), "fine");
  EXPECT_FALSE(c.closed());
  c.close();
  broker.delete_queue(t);
}

TEST(MqsPause, PausesStillCrossMqsProcessesAfterABrokerRestartAndNoneFromTheOutageComesLate) {
  rabbitmq_node broker("mqs-pause-restart");
  broker.start();
  mqs_process mqs1(broker), mqs2(broker);
  ASSERT_TRUE(broker_ready({&mqs1, &mqs2})) << mqs1.log() << mqs2.log();
  auto t = unique_topic("restart");
  mqs_client a(mqs1.port()), b(mqs2.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(b.hello("b"));
  pull(a, t);
  pull(b, t);
  pause(a, t, 50, "before");
  ASSERT_TRUE(b.wait_for([&] { return pauses_of(b, t).size() >= 1; }, 20s)) << mqs2.log();

  broker.stop();
  for (auto* m : {&mqs1, &mqs2})
    ASSERT_TRUE(wait_until([&] { return m->log_count("broker connection lost") >= 2; }, 30s)) << m->log();
  // Without a broker a pause still reaches the hosts of its own MQS, and is not kept for later.
  pause(a, t, 100, "during the outage");
  ASSERT_TRUE(a.wait_for([&] { return pauses_of(a, t).size() >= 2; }, 20s)) << mqs1.log();
  EXPECT_EQ(pauses_of(a, t).at(1).header.at("reason"), "during the outage");

  broker.start();
  ASSERT_TRUE(broker_ready({&mqs1, &mqs2}, 2)) << mqs1.log() << mqs2.log();
  pause(a, t, 3000, "after the restart");
  ASSERT_TRUE(b.wait_for([&] { return pauses_of(b, t).size() >= 2; }, 30s)) << mqs1.log() << mqs2.log();
  auto after = pauses_of(b, t).at(1).header;
  EXPECT_EQ(after.at("reason"), "after the restart");
  EXPECT_GT(after.at("ms").get<std::int64_t>(), 0);
  EXPECT_LE(after.at("ms").get<std::int64_t>(), 3000);
  a.close();
  b.close();
  mqs1.stop();
  mqs2.stop();
  broker.stop();
}

/// The host's top level on a thread of its own.
struct host {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::shared_ptr<dde::host::top_level> top;
  std::thread thread;
  std::mutex mutex;
  struct heard {
    std::chrono::milliseconds ms;
    std::string reason, origin;
  };
  std::vector<heard> pauses;

  host(std::uint16_t port, const std::string& system, const std::string& topic) {
    dde::host::top_level_options o;
    o.mqs_url = "ws://127.0.0.1:" + std::to_string(port) + "/mqs";
    o.system = system;
    o.instance = new_uuid();
    top = std::make_shared<dde::host::top_level>(io, o);
    top->set_pause_handler(
        topic, [this](std::chrono::milliseconds ms, const std::string& reason, const std::string& origin) {
          std::lock_guard lock(mutex);
          pauses.push_back({ms, reason, origin});
        });
    top->start();
    thread = std::thread([this] { io.run(); });
  }
  ~host() {
    std::atomic<bool> stopped{false};
    top->stop(2s, [&] { stopped = true; });
    wait_until([&] { return stopped.load(); }, 5s);
    work.reset();
    io.stop();
    thread.join();
  }
  std::vector<heard> heard_so_far() {
    std::lock_guard lock(mutex);
    return pauses;
  }
};

TEST(MqsPause, TheHostTopLevelSendsPausesAndHandsThoseOfItsTopicsToTheirHandler) {
  auto& broker = shared_broker();
  mqs_process mqs1(broker), mqs2(broker);
  ASSERT_TRUE(broker_ready({&mqs1, &mqs2})) << mqs1.log() << mqs2.log();
  auto t = unique_topic("toplevel");
  host a(mqs1.port(), "hosta", t), b(mqs2.port(), "hostb", t);
  // Until its link is up a top level drops pauses and pulls: wait for the MQS to have its hello.
  ASSERT_TRUE(wait_until([&] { return mqs1.log().find("host hosta (") != std::string::npos; }, 20s));
  ASSERT_TRUE(wait_until([&] { return mqs2.log().find("host hostb (") != std::string::npos; }, 20s));
  a.top->pull(t, delivery_mode::at_most_once, 1);
  b.top->pull(t, delivery_mode::at_most_once, 1);
  a.top->pause(t, 1500ms, std::string(1500, 'x'));  // the reason is cut to what the MQS takes
  ASSERT_TRUE(wait_until([&] { return !a.heard_so_far().empty() && !b.heard_so_far().empty(); }, 20s))
      << mqs1.log() << mqs2.log();
  for (auto* h : {&a, &b}) {
    auto p = h->heard_so_far().at(0);
    EXPECT_GT(p.ms.count(), 0);
    EXPECT_LE(p.ms.count(), 1500);
    EXPECT_EQ(p.reason, std::string(1000, 'x'));
    EXPECT_NE(p.origin.find("/" + a.top->instance()), std::string::npos) << p.origin;
  }
  broker.delete_queue(t);
}

}  // namespace
}  // namespace dde::mqs::test
