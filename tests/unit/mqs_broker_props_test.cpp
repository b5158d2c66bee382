// The MQS's broker form of message ids and publish stamps (mqs/src/broker_props.hpp).
#include <gtest/gtest.h>

#include "broker_props.hpp"
#include "dde/names.hpp"
#include "resent_ids.hpp"

namespace dde::mqs {
namespace {

TEST(BrokerProps, EveryUuidIdComesBackAsItWentAndTravelsIn23Characters) {
  for (int i = 0; i < 2000; ++i) {
    auto id = new_uuid();
    auto broker = broker_message_id(id);
    ASSERT_EQ(broker.size(), 23u) << id;
    ASSERT_EQ(broker[0], '~') << id;
    ASSERT_EQ(broker.find_first_not_of("~ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << broker;
    ASSERT_EQ(host_message_id(broker), id);
  }
  // All bits, both ends of the alphabet.
  for (auto id : {"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
                  "0123abcd-4567-89ef-0123-456789abcdef"})
    EXPECT_EQ(host_message_id(broker_message_id(id)), id);
  EXPECT_EQ(broker_message_id("00000000-0000-0000-0000-000000000000"), "~AAAAAAAAAAAAAAAAAAAAAA");
  EXPECT_EQ(broker_message_id("ffffffff-ffff-ffff-ffff-ffffffffffff"), "~_____________________w");
}

TEST(BrokerProps, AnyOtherIdIsLeftAsItIsBothWays) {
  for (std::string id : {"", "order-17", "5F0C2A8E-1B7D-4C7E-9A51-3F6D2B9E8C11",  // uppercase
                         "5f0c2a8e1b7d4c7e9a513f6d2b9e8c11",                      // no dashes
                         "5f0c2a8e-1b7d-4c7e-9a51-3f6d2b9e8c1g",                  // not hex
                         "5f0c2a8e-1b7d-4c7e-9a51+3f6d2b9e8c11"})                 // a dash missing
    EXPECT_EQ(broker_message_id(id), id);
  // Another publisher's ids that are not a compacted UUID: wrong length, no mark, a character
  // outside base64url (standard base64's own two, whitespace that a base64 decoder would skip),
  // padding bits set.
  for (std::string id : {"~AAAAAAAAAAAAAAAAAAAAA", "~AAAAAAAAAAAAAAAAAAAAAAA", "xAAAAAAAAAAAAAAAAAAAAAA",
                         "~AAAAAAAAAAAAAAAAAAAAA+", "~AAAAAAAAAA/AAAAAAAAAAA", "~ AAAAAAAAAAAAAAAAAAAAA",
                         "~AAAAAAAAAAAAAAAAAAAAA\n", "~AAAAAAAAAAAAAAAAAAAAAB", "shortuuid-22-chars-abc"})
    EXPECT_EQ(host_message_id(id), id);
}

TEST(BrokerProps, ATimestampInSecondsOrMillisecondsIsAnotherPublishersAndReadInMicroseconds) {
  EXPECT_EQ(stamp_of_timestamp(0), 0u);
  EXPECT_EQ(stamp_of_timestamp(1'790'000'000), 1'790'000'000'000'000u);      // seconds (AMQP's convention)
  EXPECT_EQ(stamp_of_timestamp(1'790'000'000'123), 1'790'000'000'123'000u);  // milliseconds
  EXPECT_EQ(stamp_of_timestamp(1'790'000'000'123'456), 1'790'000'000'123'456u);  // an MQS's µs
}

TEST(ResentIds, AreRememberedForTheirTimeAndUpToTheirNumber) {
  using namespace std::chrono_literals;
  resent_ids ids(10min, 3);
  resent_ids::clock::time_point t{};
  EXPECT_FALSE(ids.seen("a", t));
  ids.remember("a", t);
  ids.remember("b", t + 1min);
  EXPECT_TRUE(ids.seen("a", t + 9min));
  EXPECT_FALSE(ids.seen("c", t + 9min));
  EXPECT_FALSE(ids.seen("a", t + 10min + 1ms)) << "older than 10 minutes";
  EXPECT_TRUE(ids.seen("b", t + 10min + 1ms));
  ids.remember("c", t + 10min + 1ms);
  ids.remember("d", t + 10min + 2ms);
  ids.remember("e", t + 10min + 3ms);
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_FALSE(ids.seen("b", t + 10min + 3ms)) << "the oldest goes first past the number kept";
  EXPECT_TRUE(ids.seen("c", t + 10min + 3ms));
}

}  // namespace
}  // namespace dde::mqs
