#include "mqs_stats_client.hpp"

#include <chrono>

#include "dde/net/http_client.hpp"

namespace dde::registry {

std::optional<std::string> mqs_http_base(const std::string& mqs_ws_url) {
  std::string scheme, rest;
  if (mqs_ws_url.rfind("ws://", 0) == 0) {
    scheme = "http://";
    rest = mqs_ws_url.substr(5);
  } else if (mqs_ws_url.rfind("wss://", 0) == 0) {
    scheme = "https://";
    rest = mqs_ws_url.substr(6);
  } else {
    return std::nullopt;
  }
  auto authority = rest.substr(0, rest.find('/'));
  if (authority.empty()) return std::nullopt;
  return scheme + authority;
}

std::optional<std::string> topics_url(const std::string& mqs_ws_url, const std::set<std::string>& topics) {
  auto base = mqs_http_base(mqs_ws_url);
  if (!base) return std::nullopt;
  std::string names;
  for (auto& t : topics) names += (names.empty() ? "" : ",") + t;
  return *base + "/topics?names=" + names;
}

mqs_stats_client::mqs_stats_client() : thread_([this] { run(); }) {}

mqs_stats_client::~mqs_stats_client() { stop(); }

void mqs_stats_client::ask(std::map<std::string, std::set<std::string>> topics, done_fn done) {
  std::lock_guard lock(mutex_);
  next_.emplace(std::move(topics), std::move(done));
  wake_.notify_one();
}

void mqs_stats_client::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void mqs_stats_client::run() {
  for (;;) {
    std::pair<std::map<std::string, std::set<std::string>>, done_fn> round;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || next_; });
      if (stopping_) return;
      round = std::move(*next_);
      next_.reset();
    }
    std::map<std::string, topic_sample> figures;
    std::string first_error;
    for (auto& [mqs, topics] : round.first) {
      auto url = topics_url(mqs, topics);
      if (!url) continue;
      auto res = net::http_fetch("GET", *url, {}, {}, std::chrono::milliseconds(2000));
      nlohmann::json body;
      if (res.answered() && res.status == 200) body = nlohmann::json::parse(res.body, nullptr, false);
      if (!body.is_object() || !body.contains("topics")) {
        if (first_error.empty())
          first_error =
              "MQS " + mqs + ": " + (res.answered() ? "HTTP " + std::to_string(res.status) : res.error);
        continue;
      }
      if (body.contains("error") && first_error.empty())
        first_error = "MQS " + mqs + ": " + body["error"].get<std::string>();
      for (auto& [topic, t] : body["topics"].items()) {
        topic_sample s;
        if (t.contains("queueDepth")) s.queue_depth = t["queueDepth"].get<double>();
        if (t.contains("deadLetterDepth")) s.dead_letter_depth = t["deadLetterDepth"].get<double>();
        s.redelivered = t.value("redelivered", 0.0);
        s.published = t.value("published", 0.0);
        figures[mqs + " " + topic] = s;
      }
    }
    round.second(std::move(figures), first_error);
  }
}

}  // namespace dde::registry
