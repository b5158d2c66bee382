// ddectl: a command-line client of the registry's REST API (and, with `ask`, of a pool through an
// MQS). Exit status: 0 ok, 1 the registry answered an error, 2 usage error, 3 the registry cannot be
// reached.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "dde/net/auth.hpp"
#include "dde/net/http_client.hpp"
#include "dde/net/tls.hpp"
#include "dde/registry/ctl_ask.hpp"
#include "dde/registry/ctl_commands.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto inv = dde::ctl::parse_invocation(args, std::cin);
  if (!inv.help.empty()) {
    std::fputs(inv.help.c_str(), stdout);
    return 0;
  }
  dde::net::set_cluster_secret(inv.cluster_secret);
  // https to the registry and wss to an MQS (ask) use the same CA and client certificate.
  dde::net::set_default_client_tls(inv.tls);
  std::map<std::string, std::string> headers;
  if (!inv.token.empty()) headers["Authorization"] = "Bearer " + inv.token;
  inv.registry = dde::ctl::choose_registry(inv.registry, headers, inv.timeout);
  if (inv.ask) {
    dde::ctl::ask_outcome outcome;
    if (inv.ask->check_registry)
      outcome = dde::ctl::resolve_pool(*inv.ask, {inv.registry, headers}, inv.timeout);
    if (outcome.status == 0) outcome = dde::ctl::run_ask(*inv.ask, inv.timeout);
    if (outcome.status == 0)
      std::fputs((outcome.text + "\n").c_str(), stdout);
    else
      std::fprintf(stderr, "ddectl: %s\n", outcome.text.c_str());
    return outcome.status;
  }
  if (!inv.error.empty() || !inv.call) {
    std::fprintf(stderr, "ddectl: %s\n", inv.error.c_str());
    return 2;
  }
  const auto& call = *inv.call;
  auto url = inv.registry + call.path;
  auto res = dde::net::http_fetch(call.method, url, call.body, headers, inv.timeout);
  if (!res.answered()) {
    std::fprintf(stderr, "ddectl: cannot reach the registry at %s: %s\n", inv.registry.c_str(),
                 res.error.c_str());
    return 3;
  }
  auto body = nlohmann::ordered_json::parse(res.body, nullptr, false);
  // A failed apply still says what it did with each pool.
  bool partial = inv.command == "apply" && body.is_object() && body.contains("pools");
  if (res.status < 300 || partial) {
    if (body.is_discarded())
      std::fputs((res.body + "\n").c_str(), stdout);
    else
      std::fputs(dde::ctl::render(inv.command, inv.args, body, inv.output).c_str(), stdout);
  }
  if (res.status >= 300) {
    std::fprintf(stderr, "ddectl: %s (HTTP %d)\n", dde::ctl::registry_error_text(res.body).c_str(),
                 res.status);
    return 1;
  }
  return 0;
}
