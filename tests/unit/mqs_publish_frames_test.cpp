// The MQS's own basic.publish encoding, read back by rabbitmq-c's frame decoder (the one that reads
// what brokers send): every frame, every field, bodies split at the frame size.
#include <amqp.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "broker_props.hpp"
#include "publish_frames.hpp"

namespace dde::mqs {
namespace {

struct decoded_publish {
  std::uint16_t channel = 0;
  std::string routing_key, exchange;
  bool mandatory = true, immediate = true;
  std::uint64_t body_size = 0;
  int delivery_mode = -1;
  std::string body;
  int body_frames = 0;
  message_props props;               ///< what rabbitmq-c decoded of the properties, read back as the MQS does
  std::string broker_message_id;     ///< the message id as the broker got it
  std::size_t properties_bytes = 0;  ///< of the content header, after class, weight and body size
  amqp_flags_t flags = 0;
};

std::string text(const amqp_bytes_t& b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

/// Decodes `bytes` with rabbitmq-c into publishes; fails the test on anything else.
std::vector<decoded_publish> decode(const std::string& bytes, std::uint32_t frame_max) {
  std::vector<decoded_publish> out;
  amqp_connection_state_t st = amqp_new_connection();
  // A fresh connection expects the protocol header first; then it is tuned as after connection.tune.
  std::string header("AMQP\x00\x00\x09\x01", 8);
  amqp_frame_t start{};
  EXPECT_EQ(amqp_handle_input(st, amqp_bytes_t{header.size(), header.data()}, &start), 8);
  EXPECT_EQ(start.frame_type, 'A');  // AMQP_PSEUDOFRAME_PROTOCOL_HEADER (amqp_private.h)
  EXPECT_EQ(amqp_tune_connection(st, 0, int(frame_max), 0), AMQP_STATUS_OK);
  amqp_bytes_t left{bytes.size(), const_cast<char*>(bytes.data())};
  while (left.len > 0) {
    amqp_frame_t frame{};
    // A frame's payload size is at bytes 3..6 of it (type, channel, size).
    std::size_t payload_size = 0;
    if (left.len >= 7)
      for (int i = 3; i < 7; ++i)
        payload_size = payload_size << 8 | static_cast<unsigned char*>(left.bytes)[i];
    int used = amqp_handle_input(st, left, &frame);
    if (used < 0) {
      ADD_FAILURE() << "rabbitmq-c refused the bytes: " << amqp_error_string2(used);
      break;
    }
    left.bytes = static_cast<char*>(left.bytes) + used;
    left.len -= std::size_t(used);
    if (frame.frame_type == AMQP_FRAME_METHOD) {
      EXPECT_EQ(frame.payload.method.id, AMQP_BASIC_PUBLISH_METHOD);
      auto* m = static_cast<amqp_basic_publish_t*>(frame.payload.method.decoded);
      decoded_publish p;
      p.channel = frame.channel;
      p.exchange.assign(static_cast<char*>(m->exchange.bytes), m->exchange.len);
      p.routing_key.assign(static_cast<char*>(m->routing_key.bytes), m->routing_key.len);
      p.mandatory = m->mandatory;
      p.immediate = m->immediate;
      out.push_back(p);
    } else if (frame.frame_type == AMQP_FRAME_HEADER) {
      EXPECT_FALSE(out.empty());
      if (out.empty()) break;
      EXPECT_EQ(frame.channel, out.back().channel);
      EXPECT_EQ(frame.payload.properties.class_id, AMQP_BASIC_CLASS);
      out.back().body_size = frame.payload.properties.body_size;
      out.back().properties_bytes = payload_size - 12;
      auto* props = static_cast<amqp_basic_properties_t*>(frame.payload.properties.decoded);
      out.back().flags = props->_flags;
      out.back().delivery_mode = props->delivery_mode;
      auto& got = out.back().props;
      if (props->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
        out.back().broker_message_id = text(props->message_id);
        got.message_id = host_message_id(out.back().broker_message_id);
      }
      if (props->_flags & AMQP_BASIC_TIMESTAMP_FLAG) got.published_us = stamp_of_timestamp(props->timestamp);
      if (props->_flags & AMQP_BASIC_APP_ID_FLAG) got.app_id = text(props->app_id);
      if (props->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) got.content_type = text(props->content_type);
      if (props->_flags & AMQP_BASIC_HEADERS_FLAG)
        for (int i = 0; i < props->headers.num_entries; ++i) {
          auto& e = props->headers.entries[i];
          EXPECT_EQ(e.value.kind, AMQP_FIELD_KIND_UTF8);
          got.headers.emplace_back(text(e.key), text(e.value.value.bytes));
        }
    } else if (frame.frame_type == AMQP_FRAME_BODY) {
      EXPECT_FALSE(out.empty());
      if (out.empty()) break;
      EXPECT_EQ(frame.channel, out.back().channel);
      auto& frag = frame.payload.body_fragment;
      EXPECT_LE(frag.len + 8, frame_max);
      out.back().body.append(static_cast<char*>(frag.bytes), frag.len);
      ++out.back().body_frames;
    }
    amqp_maybe_release_buffers(st);
  }
  amqp_destroy_connection(st);
  return out;
}

TEST(PublishFrames, RabbitmqCReadsBackEveryPublishOfABatch) {
  const std::uint32_t frame_max = 4096;
  publish_frames batch(frame_max);
  std::string big(10000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = char('a' + i % 26);
  ASSERT_TRUE(batch.add(1, "sys.consumer", 2, "hello"));
  ASSERT_TRUE(batch.add(2, "sys.other", 1, ""));  // an empty body: no body frame
  ASSERT_TRUE(batch.add(2, std::string(255, 'q'), 1, big));
  ASSERT_TRUE(batch.add(7, "x", 2, std::string(frame_max - 8, 'z')));  // exactly one full frame
  auto got = decode(batch.bytes(), frame_max);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].channel, 1);
  EXPECT_EQ(got[0].exchange, "");
  EXPECT_EQ(got[0].routing_key, "sys.consumer");
  EXPECT_FALSE(got[0].mandatory);
  EXPECT_FALSE(got[0].immediate);
  EXPECT_EQ(got[0].delivery_mode, 2);
  EXPECT_EQ(got[0].body_size, 5u);
  EXPECT_EQ(got[0].body, "hello");
  EXPECT_EQ(got[1].channel, 2);
  EXPECT_EQ(got[1].delivery_mode, 1);
  EXPECT_EQ(got[1].body_size, 0u);
  EXPECT_EQ(got[1].body_frames, 0);
  EXPECT_EQ(got[2].routing_key, std::string(255, 'q'));
  EXPECT_EQ(got[2].body_size, big.size());
  EXPECT_EQ(got[2].body, big);
  EXPECT_EQ(got[2].body_frames, 3);  // 4088 + 4088 + 1824
  EXPECT_EQ(got[3].channel, 7);
  EXPECT_EQ(got[3].body_frames, 1);
  EXPECT_EQ(got[3].body, std::string(frame_max - 8, 'z'));
}

TEST(PublishFrames, PropertiesReadBackAsTheyWereGivenAndOnlyTheGivenOnesAreSet) {
  publish_frames batch(131072);
  message_props all;
  all.message_id = "5f0c2a8e-1b7d-4c7e-9a51-3f6d2b9e8c11";
  all.app_id = "sys/producer";
  all.content_type = "application/octet-stream";
  all.headers = {{"replyTo", "sys/replies"}, {"deadLetter", std::string(70000 / 2, 'd')}, {"empty", ""}};
  message_props some;
  some.app_id = "sys/other";
  ASSERT_TRUE(batch.add(1, "sys.consumer", 1, "{\"seq\":1}", all));
  ASSERT_TRUE(batch.add(2, "sys.consumer", 2, "", some));
  ASSERT_TRUE(batch.add(1, "sys.consumer", 1, "plain"));
  auto got = decode(batch.bytes(), 131072);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].props.message_id, all.message_id);
  EXPECT_EQ(got[0].props.app_id, all.app_id);
  EXPECT_EQ(got[0].props.content_type, all.content_type);
  EXPECT_EQ(got[0].props.headers, all.headers);
  EXPECT_EQ(got[0].delivery_mode, 1);
  EXPECT_EQ(got[0].body, "{\"seq\":1}");
  EXPECT_EQ(got[1].flags, AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_APP_ID_FLAG);
  EXPECT_EQ(got[1].props.app_id, "sys/other");
  EXPECT_EQ(got[1].delivery_mode, 2);
  EXPECT_EQ(got[1].body_size, 0u);
  EXPECT_EQ(got[2].flags, AMQP_BASIC_DELIVERY_MODE_FLAG);
  EXPECT_TRUE(got[2].props.empty());
  EXPECT_EQ(got[2].body, "plain");
}

TEST(PublishFrames, ThePublishStampIsTheTimestampPropertyInMicroseconds) {
  publish_frames batch(131072);
  message_props stamped;
  stamped.headers = {{"replyTo", "sys/replies"}};
  stamped.published_us = 1'790'000'000'123'456;
  message_props only_stamp;
  only_stamp.published_us = 1'790'000'000'000'042;
  ASSERT_TRUE(batch.add(1, "sys.consumer", 2, "a", stamped));
  ASSERT_TRUE(batch.add(1, "sys.consumer", 2, "b", only_stamp));
  auto got = decode(batch.bytes(), 131072);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].props, stamped);
  EXPECT_EQ(got[1].flags, AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_TIMESTAMP_FLAG)
      << "no header table for it";
  EXPECT_EQ(got[1].props, only_stamp);
}

TEST(PublishFrames, AUuidMessageIdTravelsCompactedSoADdeMessageStaysWithinTheBrokersInlineLimit) {
  // RabbitMQ keeps properties of at most 64 bytes on the queue's heap (broker_props.hpp): a DDE
  // message's id, sender and publish stamp fit, with a sender address of up to 28 characters.
  publish_frames batch(131072);
  message_props dde;
  dde.message_id = "5f0c2a8e-1b7d-4c7e-9a51-3f6d2b9e8c11";
  dde.app_id = "sampleSystem/producer-pool1";  // 27 characters
  dde.published_us = 1'790'000'000'123'456;
  message_props foreign;
  foreign.message_id = "5F0C2A8E-1B7D-4C7E-9A51-3F6D2B9E8C11";  // not the lowercase form: as it is
  ASSERT_TRUE(batch.add(1, "sys.consumer", 1, "{\"seq\":1}", dde));
  ASSERT_TRUE(batch.add(1, "sys.consumer", 1, "x", foreign));
  auto got = decode(batch.bytes(), 131072);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].broker_message_id.size(), 23u) << got[0].broker_message_id;
  EXPECT_EQ(got[0].broker_message_id[0], '~');
  EXPECT_EQ(got[0].props, dde) << "read back as it was given";
  EXPECT_LE(got[0].properties_bytes, 64u);
  EXPECT_EQ(got[1].broker_message_id, foreign.message_id);
  EXPECT_EQ(got[1].props, foreign);
}

TEST(PublishFrames, ARoutingKeyLongerThanAShortStringIsRefusedAndNothingIsWritten) {
  publish_frames batch(131072);
  EXPECT_FALSE(batch.add(1, std::string(256, 'k'), 1, "body"));
  EXPECT_TRUE(batch.empty());
  ASSERT_TRUE(batch.add(1, "k", 1, "body"));
  auto size = batch.size();
  batch.clear();
  EXPECT_TRUE(batch.empty());
  // Each frame: 7 bytes of type, channel and size, then its payload, then frame-end.
  EXPECT_EQ(size, (7 + 10 + 1) + (7 + 15 + 1) + (7 + 4 + 1));  // method, header, body
}

}  // namespace
}  // namespace dde::mqs
