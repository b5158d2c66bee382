// Backpressure of the MQS towards hosts that enqueue faster than the broker takes.
#include <gtest/gtest.h>

#include "dde/mqs/flow_control.hpp"

namespace dde::mqs {
namespace {

class fake_connection : public net::ws_connection {
 public:
  explicit fake_connection(std::uint64_t id) : id_(id) {}
  void send(std::string, bool) override {}
  void close(std::string) override {}
  void pause_reading(bool paused) override { this->paused = paused; }
  std::size_t queued_bytes() const override { return 0; }
  const std::string& remote() const override { return remote_; }
  std::uint64_t id() const override { return id_; }
  bool paused = false;

 private:
  std::uint64_t id_;
  std::string remote_ = "test";
};

TEST(FlowControl, ConnectionsArePausedAboveTheLimitAndResumedBelowHalfOfIt) {
  flow_control flow(100, 1 << 20);
  auto a = std::make_shared<fake_connection>(1), b = std::make_shared<fake_connection>(2);
  flow.add(99, 99);
  flow.pause_if_full(a);
  EXPECT_FALSE(a->paused);
  flow.add(1, 1);
  flow.pause_if_full(a);
  flow.pause_if_full(b);
  EXPECT_TRUE(a->paused && b->paused);
  flow.remove(49, 49);  // 51 left: not yet
  EXPECT_TRUE(a->paused && b->paused);
  flow.remove(1, 1);
  EXPECT_FALSE(a->paused || b->paused);
  EXPECT_EQ(flow.messages(), 50u);
}

TEST(FlowControl, TheByteLimitCountsToo) {
  flow_control flow(1000, 1000);
  auto a = std::make_shared<fake_connection>(1);
  flow.add(1, 1000);
  EXPECT_TRUE(flow.full());
  flow.pause_if_full(a);
  EXPECT_TRUE(a->paused);
  flow.remove(1, 1000);
  EXPECT_FALSE(a->paused);
}

TEST(FlowControl, AForgottenConnectionIsNotResumed) {
  flow_control flow(2, 1000);
  auto a = std::make_shared<fake_connection>(1);
  flow.add(2, 2);
  flow.pause_if_full(a);
  flow.forget(1);
  flow.remove(2, 2);
  EXPECT_TRUE(a->paused);  // it closed meanwhile: nothing to resume
}

}  // namespace
}  // namespace dde::mqs
