#pragma once
// Helpers of the registry's integration tests: a dde-registry child process on a free loopback
// port with a small REST client, and the thesis's sample deploy body adapted to loopback.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dde_test.hpp"
#include "registry_fake_node.hpp"

namespace dde::registry::test {

using json = nlohmann::ordered_json;

/// A REST answer: its status and its body as JSON (discarded if not JSON).
struct answer {
  int status = 0;
  json body;
  std::string content_type;
  std::map<std::string, std::string> headers;  ///< lower-case names
};

/// A dde-registry child process (debug log), started on a free port; stopped on destruction.
class registry_process {
 public:
  explicit registry_process(std::vector<std::string> extra = {});
  ~registry_process();
  registry_process(const registry_process&) = delete;
  registry_process& operator=(const registry_process&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const;
  bool running();
  int stop();
  void kill9();

  /// One REST call (with `token` as `Authorization: Bearer`, if not empty); throws if no HTTP answer came.
  answer call(const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& token = "");
  answer get(const std::string& path) { return call("GET", path); }
  answer post(const std::string& path, const json& body) { return call("POST", path, body.dump()); }

 private:
  std::uint16_t port_ = 0;
  std::unique_ptr<dde::test::child_process> proc_;
};

/// Options of a fake node called `name` whose activator would listen on `activator_port`.
fake_node::options named(const std::string& name, std::uint16_t activator_port = 42042);

/// The thesis's sample deploy body (3.2.2) adapted to loopback: our MQS port, the consumer .so,
/// one local worker and one on a second node's activator.
json thesis_deploy_body(const std::string& bootstrapper_id);

/// The first `n` keys of an object, in order.
std::vector<std::string> first_keys(const json& object, std::size_t n);

/// The `error` of an error answer, or "".
std::string error_of(const answer& a);

}  // namespace dde::registry::test
