// Waiting for the MQS link without a top level: each waiter hears the answer once, or why the link is
// not up when its own deadline passes first.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "link_waiters.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

TEST(LinkWaiters, EveryWaiterHearsTheAnswerOnceAndItsTimerThenChangesNothing) {
  boost::asio::io_context io;
  auto strand = boost::asio::make_strand(io);
  link_waiters waiters(strand);
  std::vector<std::string> heard;
  for (int i = 0; i < 2; ++i)
    waiters.wait(
        60s, [&](std::string e) { heard.push_back("answered:" + e); }, [] { return std::string("late"); });
  EXPECT_EQ(waiters.size(), 2u);
  waiters.answer("");
  EXPECT_EQ(heard, (std::vector<std::string>{"answered:", "answered:"}));
  EXPECT_EQ(waiters.size(), 0u);
  io.run();  // the cancelled timers' handlers run at once and tell nobody
  EXPECT_EQ(heard.size(), 2u);
}

TEST(LinkWaiters, AWaiterWhoseDeadlinePassesFirstHearsWhyAndTheOthersWait) {
  boost::asio::io_context io;
  auto strand = boost::asio::make_strand(io);
  link_waiters waiters(strand);
  std::vector<std::string> heard;
  waiters.wait(
      5ms, [&](std::string e) { heard.push_back("short:" + e); }, [] { return std::string("no link yet"); });
  waiters.wait(
      60s, [&](std::string e) { heard.push_back("long:" + e); }, [] { return std::string("late"); });
  while (heard.empty()) io.run_one();  // the short deadline comes first: nothing else is due
  EXPECT_EQ(heard, std::vector<std::string>{"short:no link yet"});
  EXPECT_EQ(waiters.size(), 1u);
  waiters.answer("stopping");
  EXPECT_EQ(heard, (std::vector<std::string>{"short:no link yet", "long:stopping"}));
  io.run();
}

}  // namespace
}  // namespace dde::host
