#pragma once
/// \file
/// The `/activator` link between a router's proxy and a node's Isolate Deployer (remote workers,
/// activator/PROTOCOL.md): every frame as a struct with one encoder and one decoder, used by both ends.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "dde/protocol/result.hpp"

namespace dde::protocol {

constexpr int deployer_protocol_version = 1;

// --- proxy -> deployer ---
namespace proxy {
/// The first frame: run one worker of this pool.
struct spawn {
  nlohmann::json spec;  ///< the pool spec (to_json of the router's spec, with its names and uri)
  std::size_t index = 0;
  std::string instance;  ///< the asking isolate-system instance (replies come back to it)
  int protocol = deployer_protocol_version;
};
struct message {
  std::uint64_t delivery = 0;
  envelope env;
  bool redelivered = false;
};
/// The answer to an `ask` the remote worker made.
struct reply {
  envelope env;
};
enum class directive { resume, restart, stop };
/// The router's supervision decision after a `crashed`.
struct supervise {
  directive what = directive::resume;
  std::chrono::milliseconds delay{0};
};
}  // namespace proxy
using proxy_frame = std::variant<proxy::spawn, proxy::message, proxy::reply, proxy::supervise>;

// --- deployer -> proxy ---
namespace deployer {
struct spawned {
  std::string worker_id;
};
/// The spawn was refused (the link closes), or a frame was wrong.
struct error {
  std::string error;
};
struct done {
  std::uint64_t delivery = 0;
};
struct failed {
  std::uint64_t delivery = 0;
  std::string error;
  std::string worker_id;  ///< the replacement's id, "" when the slot is down
};
struct rate_limited {
  std::uint64_t delivery = 0;
  std::chrono::milliseconds delay{0};
  std::string reason;
  envelope env;
  bool redelivered = false;
};
struct up {
  std::string worker_id;
};
struct crashed {
  std::uint64_t delivery = 0;
  std::string error;
};
/// A message the remote worker sends: it goes out through the proxy's isolate system.
struct enqueue {
  std::string topic;
  delivery_mode mode = delivery_mode::at_least_once;
  envelope env;
};
}  // namespace deployer
using deployer_frame =
    std::variant<deployer::spawned, deployer::error, deployer::done, deployer::failed, deployer::rate_limited,
                 deployer::up, deployer::crashed, deployer::enqueue>;

std::string encode(const proxy_frame& f);
/// A frame from a proxy, or why it is not one (not JSON, unknown type, a bad field).
result<proxy_frame> parse_proxy_frame(std::string_view text);

std::string encode(const deployer_frame& f);
/// A frame from a deployer, or why it is not one.
result<deployer_frame> parse_deployer_frame(std::string_view text);

}  // namespace dde::protocol
