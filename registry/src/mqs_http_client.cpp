#include "mqs_http_client.hpp"

#include <chrono>

#include "dde/net/auth.hpp"
#include "dde/net/http_client.hpp"

namespace dde::registry {
namespace {
// A replay publishes and waits for the broker's confirms (the MQS gives them 30 s).
constexpr auto call_timeout = std::chrono::seconds(60);
}  // namespace

mqs_http_client::mqs_http_client(std::string cluster_secret)
    : secret_(std::move(cluster_secret)), thread_([this] { run(); }) {}

mqs_http_client::~mqs_http_client() { stop(); }

void mqs_http_client::call(mqs_call call, std::function<void(mqs_reply)> done) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      calls_.emplace_back(std::move(call), std::move(done));
      wake_.notify_one();
      return;
    }
  }
  done(mqs_reply{false, 0, {}, "the registry is stopping"});
}

void mqs_http_client::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void mqs_http_client::run() {
  for (;;) {
    std::pair<mqs_call, std::function<void(mqs_reply)>> next;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
      if (stopping_) {
        for (auto& c : calls_) c.second(mqs_reply{false, 0, {}, "the registry is stopping"});
        calls_.clear();
        return;
      }
      next = std::move(calls_.front());
      calls_.pop_front();
    }
    auto& [call, done] = next;
    auto res = net::http_fetch(call.method, call.url, call.body, net::cluster_secret_headers(secret_),
                               std::chrono::duration_cast<std::chrono::milliseconds>(call_timeout));
    done(mqs_reply{res.answered(), res.status, std::move(res.body), res.error});
  }
}

}  // namespace dde::registry
