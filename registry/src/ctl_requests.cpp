#include "ctl_requests.hpp"

#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
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

const std::vector<std::string> deploy_flags = {"bootstrapper", "mqs",           "system",  "isolate",
                                               "uri",          "workers",       "router",  "hot-deployment",
                                               "args",         "delivery-mode", "credits", "sha256"};

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
rest_call apply_from(const std::vector<std::string>& a, const cli& c, std::istream& stdin_for_dash) {
  auto file = c.get("filename");
  if (!file.empty() && !a.empty()) throw usage_error("give the file once: -f FILE or FILE");
  if (file.empty() && a.empty()) throw usage_error("apply needs -f FILE (a JSON array of deploy bodies, '-' = standard input)");
  auto call = deploy_from_file(file.empty() ? a[0] : file, stdin_for_dash);
  call.path = "/registry/apply";
  auto body = json::parse(call.body);
  if (!body.is_array() && !body.is_object())
    throw usage_error("the file must hold a JSON array of deploy bodies or {\"pools\": [...]}");
  if (c.enabled("dry-run")) {
    if (body.is_array()) body = json{{"pools", body}};
    body["dryRun"] = true;
    call.body = body.dump(2);
  }
  return call;
}

/// `dlq list|show|replay|purge SYSTEM/POOL [ID...]`: the pool's dead letters (GET/POST /registry/dlq/...).
rest_call dlq_from(const std::vector<std::string>& a, const cli& c, std::istream&) {
  const auto& sub = a[0];
  auto pool = dde::parse_address(a[1]);
  if (!pool) throw usage_error("\"" + a[1] + "\" is not a pool address system/pool");
  std::vector<std::string> ids(a.begin() + 2, a.end());
  const std::string path = "/registry/dlq/" + pool->system + "/" + pool->isolate;
  const bool all = c.enabled("all");
  std::optional<int> limit;
  if (!c.get("limit").empty()) {
    try {
      limit = int(c.get_int("limit", 1, 10000));
    } catch (const std::invalid_argument& e) {
      throw usage_error(e.what());
    }
  }
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
ask_call ask_from(const std::vector<std::string>& a, const cli& c, std::istream& stdin_for_dash) {
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
  bool check = !c.enabled("no-registry");
  auto mode = c.get("mode");
  if (mode.empty() && !check) mode = "at-least-once";
  if (!mode.empty() && mode != "at-least-once" && mode != "at-most-once")
    throw usage_error("--mode must be at-least-once or at-most-once, got \"" + mode + "\"");
  auto mqs = c.get("mqs");
  if (mqs.empty() && !check) mqs = "ws://127.0.0.1:42043/mqs";
  if (!mqs.empty() && mqs.rfind("ws://", 0) != 0 && mqs.rfind("wss://", 0) != 0)
    throw usage_error("--mqs must be a ws:// or wss:// URL, got \"" + mqs + "\"");
  return {mqs, to->str(), body, mode, check};
}

rest_call deploy_from_flags(const cli& c) {
  json body = {{"action", "action.addIsolate"}};
  const std::pair<const char*, const char*> required[] = {{"bootstrapper", "bootstrapperId"},
                                                          {"mqs", "messageQueuingSystemServer"},
                                                          {"system", "isolateSystemName"},
                                                          {"isolate", "isolateName"},
                                                          {"uri", "uri"}};
  for (auto& [flag, key] : required) {
    if (c.get(flag).empty()) throw usage_error(std::string("deploy needs --") + flag + " (or a FILE.json)");
    body[key] = c.get(flag);
  }
  body["workersPaths"] = split_list(c.get("workers"));
  body["routerType"] = c.get("router");
  const auto& hot = c.get("hot-deployment");
  if (hot != "true" && hot != "false") throw usage_error("--hot-deployment must be true or false");
  body["hotDeployment"] = hot == "true";
  if (!c.get("args").empty()) {
    auto args = json::parse(c.get("args"), nullptr, false);
    if (args.is_discarded()) throw usage_error("--args is not valid JSON: " + c.get("args"));
    body["args"] = args;
  }
  if (!c.get("delivery-mode").empty()) body["deliveryMode"] = c.get("delivery-mode");
  if (!c.get("sha256").empty()) body["sha256"] = c.get("sha256");
  if (!c.get("credits").empty()) {
    try {
      body["credits"] = c.get_int("credits", 1, 1 << 20);
    } catch (const std::invalid_argument& e) {
      throw usage_error(e.what());
    }
  }
  return {"POST", "/registry/deploy", body.dump(2)};
}

}  // namespace dde::ctl::detail
