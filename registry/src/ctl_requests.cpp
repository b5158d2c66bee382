#include "ctl_requests.hpp"

#include <cctype>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "dde/names.hpp"
#include "dde/net/auth.hpp"
#include "dde/net/target.hpp"

namespace dde::ctl::detail {

using json = nlohmann::json;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    auto begin = item.find_first_not_of(" \t"), end = item.find_last_not_of(" \t");
    if (begin != std::string::npos) out.push_back(item.substr(begin, end - begin + 1));
  }
  if (out.empty()) throw usage_error("the list \"" + text + "\" is empty");
  return out;
}

rest_call deploy_from_file(const std::string& file, std::istream& stdin_for_dash) {
  std::string text;
  if (file == "-") {
    std::stringstream ss;
    ss << stdin_for_dash.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(file);
    if (!in) throw usage_error("cannot read " + file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto name = file == "-" ? std::string("standard input") : file;
  if (json::parse(text, nullptr, false).is_discarded()) throw usage_error(name + " is not valid JSON");
  return {"POST", "/registry/deploy", text};
}

/// `apply -f FILE`: the file as it is (an array of deploy bodies or {"pools": [...]}), marked as a
/// dry run with --dry-run.
rest_call apply_from(const std::vector<std::string>& a, const option_values& v,
                     std::istream& stdin_for_dash) {
  const auto& file = v.filename;
  if (!file.empty() && !a.empty()) throw usage_error("give the file once: -f FILE or FILE");
  if (file.empty() && a.empty())
    throw usage_error("apply needs -f FILE (a JSON array of deploy bodies, '-' = standard input)");
  auto call = deploy_from_file(file.empty() ? a[0] : file, stdin_for_dash);
  call.path = "/registry/apply";
  auto body = json::parse(call.body);
  if (!body.is_array() && !body.is_object())
    throw usage_error("the file must hold a JSON array of deploy bodies or {\"pools\": [...]}");
  if (v.dry_run) {
    if (body.is_array()) body = json{{"pools", body}};
    body["dryRun"] = true;
    call.body = body.dump(2);
  }
  return call;
}

/// `dlq list|show|replay|purge SYSTEM/POOL [ID...]`: the pool's dead letters (GET/POST /registry/dlq/...).
rest_call dlq_from(const std::vector<std::string>& a, const option_values& v, std::istream&) {
  const auto& sub = a[0];
  auto pool = dde::parse_address(a[1]);
  if (!pool) throw usage_error("\"" + a[1] + "\" is not a pool address system/pool");
  std::vector<std::string> ids(a.begin() + 2, a.end());
  const std::string path = "/registry/dlq/" + pool->system + "/" + pool->isolate;
  const bool all = v.all;
  const auto& limit = v.limit;
  if (sub == "list") {
    if (!ids.empty() || all) throw usage_error("dlq list takes no ids (dlq show SYSTEM/POOL ID shows one)");
    if (limit && *limit > 1000) throw usage_error("dlq list shows at most 1000 messages (--limit)");
    return rest_call{"GET", path + (limit ? "?limit=" + std::to_string(*limit) : ""), ""};
  }
  if (sub == "show") {
    if (ids.size() != 1 || all || limit) throw usage_error("usage: ddectl dlq show SYSTEM/POOL ID");
    return rest_call{"GET", path + "/" + net::percent_encode(ids[0]), ""};
  }
  if (sub == "replay" || sub == "purge") {
    if (ids.empty() && !all) throw usage_error("dlq " + sub + " needs message ids or --all");
    if (!ids.empty() && all) throw usage_error("dlq " + sub + " takes message ids or --all, not both");
    if (limit && sub == "purge") throw usage_error("--limit goes with list and replay");
    json body = json::object();
    if (!ids.empty()) body["ids"] = ids;
    if (limit) body["limit"] = *limit;
    return rest_call{"POST", path + "/" + sub, body.dump(2)};
  }
  throw usage_error("dlq needs list, show, replay or purge, got \"" + sub + "\"");
}

/// `ask ADDRESS [JSON]`: checked here so that a bad address or body never reaches the MQS.
ask_call ask_from(const std::vector<std::string>& a, const option_values& v, std::istream& stdin_for_dash) {
  auto to = parse_address(a[0]);
  if (!to) throw usage_error("\"" + a[0] + "\" is not a pool address system/isolate");
  std::string body = a.size() > 1 ? a[1] : "{}";
  if (body == "-") {
    std::stringstream ss;
    ss << stdin_for_dash.rdbuf();
    body = ss.str();
  }
  if (json::parse(body, nullptr, false).is_discarded())
    throw usage_error("the message is not valid JSON: " + body);
  bool check = !v.no_registry;
  auto mode = v.mode;
  if (mode.empty() && !check) mode = "at-least-once";
  if (!mode.empty() && mode != "at-least-once" && mode != "at-most-once")
    throw usage_error("--mode must be at-least-once or at-most-once, got \"" + mode + "\"");
  auto mqs = v.ask_mqs;
  if (mqs.empty() && !check) mqs = "ws://127.0.0.1:42043/mqs";
  if (!mqs.empty() && mqs.rfind("ws://", 0) != 0 && mqs.rfind("wss://", 0) != 0)
    throw usage_error("--mqs must be a ws:// or wss:// URL, got \"" + mqs + "\"");
  return {mqs, to->str(), body, mode, check};
}

rest_call deploy_from_flags(const deploy_values& v) {
  json body = {{"action", "action.addIsolate"}};
  const std::tuple<const char*, const char*, const std::string*> required[] = {
      {"bootstrapper", "bootstrapperId", &v.bootstrapper},
      {"mqs", "messageQueuingSystemServer", &v.mqs},
      {"system", "isolateSystemName", &v.system},
      {"isolate", "isolateName", &v.isolate},
      {"uri", "uri", &v.uri}};
  for (auto& [flag, key, value] : required) {
    if (value->empty()) throw usage_error(std::string("deploy needs --") + flag + " (or a FILE.json)");
    body[key] = *value;
  }
  body["workersPaths"] = split_list(v.workers);
  body["routerType"] = v.router;
  body["hotDeployment"] = v.hot_deployment;
  if (!v.args.empty()) {
    auto args = json::parse(v.args, nullptr, false);
    if (args.is_discarded()) throw usage_error("--args is not valid JSON: " + v.args);
    body["args"] = args;
  }
  if (!v.delivery_mode.empty()) body["deliveryMode"] = v.delivery_mode;
  if (!v.sha256.empty()) body["sha256"] = v.sha256;
  if (v.credits) body["credits"] = *v.credits;
  return {"POST", "/registry/deploy", body.dump(2)};
}

}  // namespace dde::ctl::detail
