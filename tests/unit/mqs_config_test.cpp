// dde-mqs settings and queue declarations.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dde/core/command_line.hpp"
#include "dde/mqs/config.hpp"
#include "dde/mqs/queue_spec.hpp"

namespace dde::mqs {
namespace {

command_line_result parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dde-mqs");
  return parse_command_line(int(args.size()), args.data());
}

TEST(MqsConfig, DefaultsAreTheDocumentedOnes) {
  auto cl = parse({});
  ASSERT_EQ(cl.error, "");
  EXPECT_EQ(cl.cfg.port, 42043);
  EXPECT_EQ(cl.cfg.prefetch, 1);
  EXPECT_EQ(cl.cfg.idle_timeout.count(), 10000);
  EXPECT_EQ(cl.cfg.confirm_window, 1000u);
  EXPECT_EQ(cl.cfg.max_message, 4194304u);
  EXPECT_EQ(cl.cfg.max_frame, 16777216u);
}

TEST(MqsConfig, FlagsTakeSpaceOrEqualsValues) {
  auto cl = parse({"--prefetch", "64", "--broker-port=5673", "--password", "s3cret"});
  ASSERT_EQ(cl.error, "");
  EXPECT_EQ(cl.cfg.prefetch, 64);
  EXPECT_EQ(cl.cfg.broker_port, 5673);
  EXPECT_EQ(cl.cfg.password, "s3cret");
}

TEST(MqsConfig, TheBrokerLoopsRunOnTheElasticThreadsUnlessGivenThreadsOfTheirOwn) {
  auto d = parse({});
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.cfg.threads, 2u);
  EXPECT_EQ(d.cfg.thread_lag.count(), 1000);
  EXPECT_FALSE(d.cfg.dequeuer_thread);
  EXPECT_FALSE(d.cfg.enqueuer_thread);
  auto cl = parse({"--threads", "1", "--thread-lag-us", "0", "--dequeuer-thread", "--enqueuer-thread"});
  ASSERT_EQ(cl.error, "");
  EXPECT_EQ(cl.cfg.threads, 1u);
  EXPECT_EQ(cl.cfg.thread_lag.count(), 0);
  EXPECT_TRUE(cl.cfg.dequeuer_thread);
  EXPECT_TRUE(cl.cfg.enqueuer_thread);
  EXPECT_EQ(parse({"--thread-lag-us", "20000000"}).error,
            "--thread-lag-us: Value 20000000 not in range 0 to 10000000");
}

TEST(MqsConfig, ThreadsAreScheduledAsABatchUnlessToldNormal) {
  EXPECT_EQ(parse({}).cfg.scheduling, "batch");
  EXPECT_EQ(parse({"--scheduling", "normal"}).cfg.scheduling, "normal");
  EXPECT_EQ(parse({"--scheduling", "fifo"}).error,
            "--scheduling: unknown scheduling \"fifo\" (batch or normal)");
}

TEST(MqsConfig, BadFlagsAreExplained) {
  EXPECT_EQ(parse({"--nope", "1"}).error, "unknown option --nope (see --help)");
  EXPECT_EQ(parse({"--port"}).error, "--port needs a value");
  EXPECT_EQ(parse({"--port", "70000"}).error, "--port: Value 70000 not in range 0 to 65535");
  EXPECT_EQ(parse({"--prefetch", "0"}).error, "--prefetch: Value 0 not in range 1 to 65535");
  EXPECT_EQ(parse({"--threads", "x"}).error, "--threads: Value x not in range 1 to 64");
  EXPECT_EQ(parse({"--lease-ms", "50"}).error, "--lease-ms: must be 0 (never) or at least 100");
  EXPECT_EQ(parse({"stray"}).error, "unexpected argument \"stray\" (see --help)");
  EXPECT_EQ(parse({"--log-level", "loud"}).error,
            "--log-level: loud not in {trace,debug,info,warn,error,critical,off}");
  EXPECT_NE(parse({"--max-message", "20000000"}).error, "");
  EXPECT_TRUE(parse({"--help"}).help);
}

TEST(MqsConfig, VersionIsAnsweredLikeEveryOtherDdeBinary) {
  auto cl = parse({"--version"});
  EXPECT_TRUE(cl.version);
  EXPECT_EQ(cl.error, "");
  EXPECT_EQ(version_text(), std::string("dde-mqs ") + dde::version());
}

TEST(MqsConfig, TlsFlagsNameFilesOrStandAloneAndAreChecked) {
  auto cl = parse({"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem", "--tls-verify-client",
                   "--broker-tls", "--broker-port", "5671"});
  EXPECT_EQ(cl.error, "");
  EXPECT_EQ(cl.cfg.tls.cert_file, "c.pem");
  EXPECT_TRUE(cl.cfg.tls.verify_client);
  EXPECT_TRUE(cl.cfg.broker_tls);
  EXPECT_EQ(cl.cfg.broker_port, 5671);
  EXPECT_EQ(cl.cfg.broker_ca, "ca.pem");  // --tls-ca by default
  EXPECT_FALSE(parse({}).cfg.broker_tls);
  EXPECT_EQ(parse({"--tls-cert", "c.pem"}).error, "--tls-cert and --tls-key go together");
  EXPECT_EQ(parse({"--tls-verify-client"}).error,
            "--tls-verify-client needs --tls-cert, --tls-key and --tls-ca");
  EXPECT_EQ(parse({"--broker-tls=maybe"}).error, "Could not convert: --broker-tls = maybe");
  EXPECT_FALSE(parse({"--broker-tls=false"}).cfg.broker_tls);
}

TEST(MqsConfig, AConfigFileIsReadAndFlagsOverrideIt) {
  auto path = std::filesystem::temp_directory_path() / ("mqs-config-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"prefetch": 8, "broker-host": "rabbit", "port": 4000})";
  auto cl = parse({"--config", path.c_str(), "--port", "5000"});
  ASSERT_EQ(cl.error, "");
  EXPECT_EQ(cl.cfg.prefetch, 8);
  EXPECT_EQ(cl.cfg.broker_host, "rabbit");
  EXPECT_EQ(cl.cfg.port, 5000);
  std::ofstream(path) << R"({"prefetch": "lots"})";
  EXPECT_NE(parse({"--config", path.c_str()}).error.find("prefetch"), std::string::npos);
  std::ofstream(path) << R"({"colour": 1})";
  EXPECT_NE(parse({"--config", path.c_str()}).error.find("colour"), std::string::npos);
  std::ofstream(path) << R"({"dequeuer-thread": true, "threads": 3})";
  auto flags = parse({"--config", path.c_str()});
  ASSERT_EQ(flags.error, "");
  EXPECT_TRUE(flags.cfg.dequeuer_thread) << "a flag in the file counts";
  EXPECT_EQ(flags.cfg.threads, 3u);
  std::ofstream(path) << "{oops";
  EXPECT_EQ(parse({"--config", path.c_str()}).error, "config file " + path.string() + ": not valid JSON");
  std::filesystem::remove(path);
  EXPECT_NE(parse({"--config", path.c_str()}).error.find(path.string()), std::string::npos);
}

TEST(MqsConfig, HelpDocumentsEveryFlagWithItsDefault) {
  auto help = help_text();
  for (auto flag : {"--listen",
                    "--port",
                    "--broker-host",
                    "--broker-port",
                    "--user",
                    "--password",
                    "--vhost",
                    "--prefetch",
                    "--idle-timeout-ms",
                    "--confirm-window",
                    "--confirm-timeout-ms",
                    "--quorum-group-size",
                    "--queue-leader-locator",
                    "--max-message",
                    "--max-frame",
                    "--threads",
                    "--thread-lag-us",
                    "--dequeuer-thread",
                    "--enqueuer-thread",
                    "--scheduling",
                    "--log-level",
                    "--config"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  EXPECT_NE(help.find("(default: 42043)"), std::string::npos);
  EXPECT_NE(help.find("--version"), std::string::npos);
}

TEST(MqsConfig, ABrokerUrlNamesEveryNodeOfACluster) {
  auto url = std::get<broker_url>(parse_broker_url("amqp://dde@rabbit-1:5673,rabbit-2,[::1]:5674/shop"));
  EXPECT_FALSE(url.tls);
  EXPECT_EQ(url.user, "dde");
  EXPECT_EQ(url.vhost, "shop");
  EXPECT_EQ(url.nodes, (std::vector<broker_node>{{"rabbit-1", 5673}, {"rabbit-2", 5672}, {"::1", 5674}}));
  EXPECT_EQ(url.nodes[2].str(), "[::1]:5674");
  auto tls = std::get<broker_url>(parse_broker_url("amqps://h1,h2/%2F"));
  EXPECT_TRUE(tls.tls);
  EXPECT_EQ(tls.vhost, "/");
  EXPECT_EQ(tls.nodes, (std::vector<broker_node>{{"h1", 5671}, {"h2", 5671}})) << "amqps' port";
  auto error = [](const std::string& text) { return std::get<std::string>(parse_broker_url(text)); };
  EXPECT_EQ(error("amqp://u:secret@h1/"),
            "--broker must not hold the password (ps shows the command line): give it in "
            "--broker-password-file or $DDE_BROKER_PASSWORD");
  EXPECT_EQ(error("http://h1"), "--broker must start with amqp:// or amqps://, got \"http://h1\"");
  EXPECT_EQ(error("amqp://h1,,h2"), "--broker: broker node \"\" has no host");
  EXPECT_EQ(error("amqp://h1:0"),
            "--broker: broker node \"h1:0\": the port must be a number from 1 to 65535");
  EXPECT_EQ(error("amqp://h1:x"),
            "--broker: broker node \"h1:x\": the port must be a number from 1 to 65535");
  EXPECT_EQ(error("amqp://[::1"), "--broker: broker node \"[::1\": an IPv6 address needs its ]");
  EXPECT_EQ(error("amqp://h1/%zz"), "--broker: the vhost \"%zz\" has a broken %-escape");
}

TEST(MqsConfig, TheBrokerFlagSetsNodesUserVhostAndTlsAndThePasswordStaysOffTheCommandLine) {
  auto old = parse({"--broker-host", "rabbit", "--broker-port", "5673"});
  ASSERT_EQ(old.error, "");
  EXPECT_EQ(old.cfg.brokers, (std::vector<broker_node>{{"rabbit", 5673}})) << "the older flags: one node";
  auto cl = parse({"--broker", "amqps://dde@h1,h2:6000/prod"});
  ASSERT_EQ(cl.error, "");
  EXPECT_EQ(cl.cfg.brokers, (std::vector<broker_node>{{"h1", 5671}, {"h2", 6000}}));
  EXPECT_EQ(cl.cfg.user, "dde");
  EXPECT_EQ(cl.cfg.vhost, "prod");
  EXPECT_TRUE(cl.cfg.broker_tls);
  EXPECT_EQ(cl.cfg.password, "guest");
  auto path = std::filesystem::temp_directory_path() / ("mqs-password-" + std::to_string(::getpid()));
  std::ofstream(path) << "s3cret\n";
  EXPECT_EQ(parse({"--broker-password-file", path.c_str()}).cfg.password, "s3cret");
  ::setenv("DDE_BROKER_PASSWORD", "from-env", 1);
  EXPECT_EQ(parse({}).cfg.password, "from-env");
  ::unsetenv("DDE_BROKER_PASSWORD");
  std::filesystem::remove(path);
  EXPECT_NE(parse({"--broker-password-file", path.c_str()}).error.find("--broker-password-file: "),
            std::string::npos);
  EXPECT_NE(parse({"--broker", "amqp://u:p@h/"}).error.find("must not hold the password"), std::string::npos);
}

TEST(QueueSpec, AtLeastOnceTopicsAreDurableQuorumQueuesWithADeliveryLimitAndDeadLetters) {
  auto s = spec_for("sys.consumer", delivery_mode::at_least_once);
  EXPECT_TRUE(s.durable);
  EXPECT_TRUE(s.quorum);
  EXPECT_EQ(s.delivery_limit, std::optional<std::int64_t>(20));
  EXPECT_EQ(s.dead_letter_queue, std::optional<std::string>("dde.dead.sys.consumer"));
  auto dl = dead_letter_spec_for("sys.consumer", delivery_mode::at_least_once);
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->name, "dde.dead.sys.consumer");
  EXPECT_TRUE(dl->durable && dl->quorum);
  EXPECT_FALSE(dl->dead_letter_queue);
}

TEST(QueueSpec, QuorumQueuesSpreadTheirLeadersAndTakeTheConfiguredGroupSize) {
  auto s = spec_for("sys.consumer", delivery_mode::at_least_once);
  EXPECT_EQ(s.placement.leader_locator, "balanced");
  EXPECT_EQ(s.placement.group_size, 0u);
  quorum_placement three{3, "client-local"};
  for (auto& q : {spec_for("sys.consumer", delivery_mode::at_least_once, three),
                  *dead_letter_spec_for("sys.consumer", delivery_mode::at_least_once, three),
                  spec_for("dde.delay-1500.sys.consumer", delivery_mode::at_least_once, three),
                  spec_for(lease_topic("m1", 60000, "sys.consumer"), delivery_mode::at_least_once, three)}) {
    EXPECT_TRUE(q.quorum) << q.name;
    EXPECT_EQ(q.placement.group_size, 3u) << q.name;
    EXPECT_EQ(q.placement.leader_locator, "client-local") << q.name;
  }
  auto cl = parse({"--quorum-group-size", "3", "--queue-leader-locator", "client-local"});
  ASSERT_TRUE(cl.error.empty()) << cl.error;
  EXPECT_EQ(cl.cfg.quorum.group_size, 3u);
  EXPECT_EQ(cl.cfg.quorum.leader_locator, "client-local");
  EXPECT_EQ(parse({}).cfg.quorum.leader_locator, "balanced");
  EXPECT_NE(parse({"--queue-leader-locator", "random"}).error.find("--queue-leader-locator"),
            std::string::npos);
  EXPECT_NE(parse({"--quorum-group-size", "256"}).error.find("not in range"), std::string::npos);
}

TEST(QueueSpec, AtMostOnceAndReplyTopicsAreTransientClassicQueues) {
  auto amo = spec_for("sys.consumer", delivery_mode::at_most_once);
  EXPECT_FALSE(amo.durable || amo.quorum || amo.expires_ms || amo.dead_letter_queue);
  auto reply = spec_for("dde.reply.abc", delivery_mode::reply);
  EXPECT_FALSE(reply.durable || reply.quorum);
  EXPECT_EQ(reply.expires_ms, std::optional<std::int64_t>(60000));
  EXPECT_FALSE(dead_letter_spec_for("sys.consumer", delivery_mode::at_most_once));
}

TEST(QueueSpec, ADelayQueueHoldsItsMessagesForItsDelayAndReturnsThemAtLeastOnce) {
  for (auto mode : {delivery_mode::at_least_once, delivery_mode::at_most_once}) {
    auto s = spec_for("dde.delay-1500.sys.consumer", mode);
    EXPECT_TRUE(s.durable && s.quorum) << "it survives a broker restart";
    EXPECT_EQ(s.message_ttl_ms, std::optional<std::int64_t>(1500));
    EXPECT_EQ(s.dead_letter_queue, std::optional<std::string>("sys.consumer"));
    EXPECT_TRUE(s.dead_letter_at_least_once);
    EXPECT_FALSE(s.delivery_limit);
    EXPECT_EQ(s.expires_ms, std::optional<std::int64_t>(2 * 1500 + 60000))
        << "deleted once unused, not before its last message came back";
    EXPECT_FALSE(dead_letter_spec_for("dde.delay-1500.sys.consumer", mode));
  }
  EXPECT_FALSE(spec_for("sys.consumer", delivery_mode::at_least_once).message_ttl_ms);
  EXPECT_FALSE(spec_for("sys.consumer", delivery_mode::at_least_once).dead_letter_at_least_once);
}

TEST(QueueSpec, ALeaseQueueIsNamedByItsMqsAndReturnsWhatItHoldsToThePoolWithinItsTtlOnceUnheld) {
  const std::string id = "3f0c5e1a-8b2d-4c6e-9a7f-0d1e2f3a4b5c";
  auto name = lease_topic(id, 1500, "sys.consumer");
  EXPECT_EQ(name, "dde.lease-1500-" + id + ".sys.consumer");
  EXPECT_TRUE(valid_topic(name)) << "the enqueuer publishes to it as to any topic";
  auto parsed = parse_lease_topic(name);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->ttl_ms, 1500);
  EXPECT_EQ(parsed->topic, "sys.consumer");
  auto s = spec_for(name, delivery_mode::at_least_once);
  EXPECT_TRUE(s.durable && s.quorum);
  EXPECT_EQ(s.message_ttl_ms, std::optional<std::int64_t>(1500));
  EXPECT_EQ(s.dead_letter_queue, std::optional<std::string>("sys.consumer"));
  EXPECT_TRUE(s.dead_letter_at_least_once);
  EXPECT_EQ(s.expires_ms, std::optional<std::int64_t>(63000))
      << "gone once unused, after its copies went back";
  EXPECT_FALSE(s.delivery_limit);
  EXPECT_FALSE(dead_letter_spec_for(name, delivery_mode::at_least_once));
  for (auto other :
       {"dde.lease-.x.sys.consumer", "dde.lease-12a-x.sys.consumer", "dde.lease-0-x.sys.consumer",
        "dde.lease-1000-.sys.consumer", "dde.lease-1000-x.consumer", "sys.consumer"})
    EXPECT_FALSE(parse_lease_topic(other)) << other;
}

TEST(QueueSpec, ADeadLetterTopicIsDeclaredLikeADeadLetterQueue) {
  auto s = spec_for("dde.dead.sys.consumer", delivery_mode::at_least_once);
  EXPECT_TRUE(s.durable && s.quorum);
  EXPECT_FALSE(s.dead_letter_queue);
  EXPECT_FALSE(dead_letter_spec_for("dde.dead.sys.consumer", delivery_mode::at_least_once));
}

}  // namespace
}  // namespace dde::mqs
