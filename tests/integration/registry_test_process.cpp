#include "registry_test_process.hpp"

#include <stdexcept>

#include "dde/net/http_client.hpp"

namespace dde::registry::test {

using namespace std::chrono_literals;
using dde::test::bin_path;
using dde::test::wait_until;

registry_process::registry_process(std::vector<std::string> extra) {
  port_ = dde::test::free_port();
  // The fake nodes of these tests count the requests they get: no heartbeat (pings, describes).
  std::vector<std::string> argv = {bin_path("dde-registry").string(),
                                   "--port",
                                   std::to_string(port_),
                                   "--log-level",
                                   "debug",
                                   "--heartbeat-ms",
                                   "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  proc_ =
      std::make_unique<dde::test::child_process>(argv, dde::test::fresh_dir("registry") / "dde-registry.log");
  if (!wait_until(
          [&] { return log().find("listening on http://") != std::string::npos || !proc_->running(); }, 10s))
    throw std::runtime_error("dde-registry did not start:\n" + log());
  if (!proc_->running()) throw std::runtime_error("dde-registry exited:\n" + log());
}

registry_process::~registry_process() {
  if (proc_->running()) proc_->stop(5s);
}

std::string registry_process::log() const { return proc_->log(); }
bool registry_process::running() { return proc_->running(); }
int registry_process::stop() { return proc_->stop(5s); }
void registry_process::kill9() { proc_->kill9(); }

answer registry_process::call(const std::string& method, const std::string& path, const std::string& body,
                              const std::string& token) {
  std::map<std::string, std::string> headers;
  if (!token.empty()) headers["Authorization"] = "Bearer " + token;
  auto r = net::http_fetch(method, url() + path, body, headers, 20s);
  if (!r.answered()) throw std::runtime_error(method + " " + path + ": " + r.error + "\n" + log());
  answer a;
  a.status = r.status;
  a.body = json::parse(r.body, nullptr, false);
  a.content_type = r.headers.count("content-type") ? r.headers["content-type"] : "";
  a.headers = r.headers;
  return a;
}

fake_node::options named(const std::string& name, std::uint16_t activator_port) {
  fake_node::options o;
  o.name = name;
  o.activator_port = activator_port;
  return o;
}

json thesis_deploy_body(const std::string& bootstrapper_id) {
  json body = json::parse(R"({
    "bootstrapperId" : "266393094",
    "action": "action.addIsolate",
    "messageQueuingSystemServer": "ws://127.0.0.1:42043/mqs",
    "isolateSystemName" : "sampleSystem",
    "isolateName" : "consumer",
    "uri" : "build/lib/workers/libconsumer.so",
    "workersPaths" : ["localhost", "ws://127.0.0.1:42044/activator"],
    "routerType" : "random",
    "hotDeployment" : true
  })");
  body["bootstrapperId"] = bootstrapper_id;
  body["uri"] = dde::test::worker_path("consumer").string();
  return body;
}

std::vector<std::string> first_keys(const json& object, std::size_t n) {
  std::vector<std::string> keys;
  for (auto& [key, value] : object.items())
    if (keys.size() < n) keys.push_back(key);
  return keys;
}

std::string error_of(const answer& a) { return a.body.is_object() ? a.body.value("error", "") : ""; }

}  // namespace dde::registry::test
