// Names, addresses, topics and ids (dde/names.hpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dde/names.hpp"

TEST(Names, AcceptLettersDigitsUnderscoreAndDash) {
  EXPECT_TRUE(dde::valid_name("sampleSystem"));
  EXPECT_TRUE(dde::valid_name("a_b-C9"));
  EXPECT_FALSE(dde::valid_name(""));
  EXPECT_FALSE(dde::valid_name("a.b"));
  EXPECT_FALSE(dde::valid_name("../x"));
  EXPECT_FALSE(dde::valid_name("a b"));
  EXPECT_FALSE(dde::valid_name(std::string(101, 'a')));
}

TEST(Names, AddressesAreSystemSlashIsolateAndMapToTopics) {
  auto a = dde::parse_address("sampleSystem/consumer");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->topic(), "sampleSystem.consumer");
  EXPECT_EQ(a->str(), "sampleSystem/consumer");
  EXPECT_FALSE(dde::parse_address("nosep"));
  EXPECT_FALSE(dde::parse_address("a/b/c"));
  EXPECT_FALSE(dde::parse_address("/b"));
}

TEST(Names, UuidsAreVersion4TextAndDifferAcrossThreadsAndForks) {
  auto well_formed = [](const std::string& u) {
    if (u.size() != 36 || u[14] != '4' || std::string("89ab").find(u[19]) == std::string::npos) return false;
    for (std::size_t i = 0; i < u.size(); ++i) {
      bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash != (u[i] == '-')) return false;
      if (!dash && std::string("0123456789abcdef").find(u[i]) == std::string::npos) return false;
    }
    return true;
  };
  std::vector<std::vector<std::string>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& ids : per_thread)
    threads.emplace_back([&ids] {
      for (int i = 0; i < 5000; ++i) ids.push_back(dde::new_uuid());
    });
  for (auto& t : threads) t.join();
  std::set<std::string> seen;
  for (auto& ids : per_thread)
    for (auto& id : ids) {
      EXPECT_TRUE(well_formed(id)) << id;
      seen.insert(id);
    }
  EXPECT_EQ(seen.size(), 20000u);
  // A forked child draws ids of its own, not the parent's next ones (this thread's generator is
  // seeded before the fork).
  EXPECT_TRUE(well_formed(dde::new_uuid()));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto id = dde::new_uuid();
    ssize_t w = ::write(pipe_fds[1], id.data(), id.size());
    ::_exit(w == ssize_t(id.size()) ? 0 : 1);
  }
  char buf[36];
  ASSERT_EQ(::read(pipe_fds[0], buf, sizeof buf), ssize_t(sizeof buf));
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_NE(std::string(buf, sizeof buf), dde::new_uuid());
}

TEST(Names, TopicsHaveTwoToFourValidParts) {
  EXPECT_TRUE(dde::valid_topic("sys.pool"));
  EXPECT_TRUE(dde::valid_topic(dde::reply_topic(dde::new_uuid())));
  EXPECT_TRUE(dde::valid_topic(dde::dead_letter_topic("sys.pool")));
  EXPECT_FALSE(dde::valid_topic("../x"));
  EXPECT_FALSE(dde::valid_topic("single"));
  EXPECT_FALSE(dde::valid_topic("a..b"));
  EXPECT_FALSE(dde::valid_topic("a.b.c.d.e"));
}

// The rule as written before the table-driven check: split at dots, 2 to 4 parts, each a valid_name.
static bool reference_valid_topic(std::string_view topic) {
  int parts = 0;
  while (true) {
    auto dot = topic.find('.');
    if (!dde::valid_name(topic.substr(0, dot))) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    topic.remove_prefix(dot + 1);
  }
  return parts >= 2 && parts <= 4;
}

TEST(Names, TheTopicCheckAgreesWithTheRuleOnEveryShortStringAndAtEachLengthLimit) {
  // Every string of up to 6 characters over a name character, a dot, a dash and three bytes no
  // name holds (a space, NUL, a non-ASCII byte).
  const std::string alphabet = std::string("a.- ") + '\0' + '\x80';
  std::size_t checked = 0;
  for (std::size_t len = 0; len <= 6; ++len) {
    std::vector<std::size_t> digit(len, 0);
    for (;;) {
      std::string t;
      for (auto d : digit) t += alphabet[d];
      ASSERT_EQ(dde::valid_topic(t), reference_valid_topic(t)) << "topic of " << len << " bytes: " << t;
      ++checked;
      std::size_t k = 0;
      while (k < len && ++digit[k] == alphabet.size()) digit[k++] = 0;
      if (k == len) break;
    }
  }
  EXPECT_EQ(checked, std::size_t(1 + 6 + 36 + 216 + 1296 + 7776 + 46656));
  const std::string longest(100, 'n'), too_long(101, 'n');
  for (const auto& t : {longest + ".b", "a." + longest, too_long + ".b", "a." + too_long, "a.b.c." + longest,
                        "a.b.c." + too_long, longest + "." + longest + "." + longest + "." + longest})
    EXPECT_EQ(dde::valid_topic(t), reference_valid_topic(t)) << t.size() << " bytes";
  EXPECT_TRUE(dde::valid_topic("a." + longest));
  EXPECT_FALSE(dde::valid_topic("a." + too_long));
}

TEST(Names, ADelayQueueNamesItsDelayAndTheTopicItsMessagesReturnTo) {
  EXPECT_EQ(dde::delay_topic("sys.pool", 5000), "dde.delay-5000.sys.pool");
  auto d = dde::parse_delay_topic("dde.delay-5000.sys.pool");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->delay_ms, 5000);
  EXPECT_EQ(d->topic, "sys.pool");
  EXPECT_TRUE(dde::valid_topic(dde::delay_topic("sys.pool", 86400000)));
  for (auto other :
       {"sys.pool", "dde.dead.sys.pool", "dde.delay-.sys.pool", "dde.delay-0.sys.pool",
        "dde.delay-86400001.sys.pool", "dde.delay-5s.sys.pool", "dde.delay-5000.sys", "dde.delay-5000"})
    EXPECT_FALSE(dde::parse_delay_topic(other)) << other;
}
