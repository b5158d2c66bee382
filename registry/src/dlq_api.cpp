#include "dlq_api.hpp"

#include <memory>
#include <vector>

#include "dde/log.hpp"
#include "dde/names.hpp"
#include "dde/net/target.hpp"
#include "rest_validation.hpp"

namespace dde::registry {
namespace {

constexpr std::string_view prefix = "/registry/dlq/";

std::shared_ptr<spdlog::logger> registry_log() { return logger("registry"); }

/// A path segment's percent-escapes decoded; nullopt when one is malformed.
std::optional<std::string> decode_segment(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int v = 0;
    for (int k = 1; k <= 2; ++k) {
      char c = s[i + k];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + d;
    }
    out += char(v);
    i += 2;
  }
  return out;
}

/// What was asked: the pool, the operation and its MQS request (without the MQS's URL).
struct dlq_op {
  std::string system, pool, op;  ///< op: list, show, replay, purge
  std::string id;                ///< show
  std::string mqs_path;          ///< e.g. /dlq?topic=s.p&limit=100
  std::string mqs_body;          ///< JSON for replay and purge
};

/// The MQS's body for a replay or purge (`op`) of `topic`, from the client's (empty: every message).
result<std::string> action_body(const std::string& text, const std::string& op, const std::string& topic) {
  using R = result<std::string>;
  auto body = text.find_first_not_of(" \t\r\n") == std::string::npos
                  ? result<ordered_json>(ordered_json::object())
                  : parse_body(text, false);
  if (!body) return R::failure("400 " + body.error());
  nlohmann::json out = {{"topic", topic}};
  for (auto& [key, value] : body.value().items()) {
    if (key == "ids") {
      if (!value.is_array() || value.empty())
        return R::failure(
            "400 \"ids\" must be a non-empty array of message ids (or leave it out: every message)");
      for (auto& id : value)
        if (!id.is_string() || id.get_ref<const std::string&>().empty())
          return R::failure("400 \"ids\" must hold message ids (non-empty strings)");
      out["ids"] = nlohmann::json::parse(value.dump());
    } else if (key == "limit" && op == "replay") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1)
        return R::failure("400 \"limit\" must be a positive integer");
      out["limit"] = value.get<std::int64_t>();
    } else {
      return R::failure("400 unknown field \"" + key.substr(0, 100) + "\"; " +
                        (op == "replay" ? "a replay takes ids (none: every message) and limit"
                                        : "a purge takes ids (none: every message)"));
    }
  }
  if (op == "replay" && !out.contains("ids")) out["all"] = true;
  return out.dump();
}

result<dlq_op> parse_op(const rest_request& req, std::string_view path) {
  using R = result<dlq_op>;
  std::vector<std::string> parts;
  auto rest = path.substr(prefix.size());
  for (std::size_t start = 0; start <= rest.size();) {
    auto slash = std::min(rest.find('/', start), rest.size());
    parts.emplace_back(rest.substr(start, slash - start));
    start = slash + 1;
  }
  if (parts.size() < 2 || parts.size() > 3)
    return R::failure(
        "404 the dead-letter paths are /registry/dlq/{system}/{pool}, /registry/dlq/{system}/{pool}/{id} "
        "and POST /registry/dlq/{system}/{pool}/replay or /purge");
  dlq_op op;
  op.system = parts[0];
  op.pool = parts[1];
  if (!valid_name(op.system) || !valid_name(op.pool))
    return R::failure("400 \"" + op.system.substr(0, 100) + "/" + op.pool.substr(0, 100) +
                      "\" is not a pool address: system and pool must be names of [A-Za-z0-9_-]");
  const std::string topic = op.system + "." + op.pool;
  if (parts.size() == 2) {
    if (req.method != "GET") return R::failure("405 GET");
    op.op = "list";
    op.mqs_path = "/dlq?topic=" + topic;
    if (auto limit = net::query_param(req.target, "limit"))
      op.mqs_path += "&limit=" + net::percent_encode(*limit);
    return op;
  }
  if (req.method == "GET") {
    auto id = decode_segment(parts[2]);
    if (!id || id->empty()) return R::failure("400 the message id in the path is not well escaped");
    op.op = "show";
    op.id = *id;
    op.mqs_path = "/dlq?topic=" + topic + "&id=" + net::percent_encode(*id);
    return op;
  }
  if (req.method != "POST") return R::failure("405 GET, POST");
  if (parts[2] != "replay" && parts[2] != "purge")
    return R::failure("404 POST goes to /registry/dlq/{system}/{pool}/replay or /purge, not \"" +
                      parts[2].substr(0, 100) + "\"");
  op.op = parts[2];
  op.mqs_path = "/dlq/" + op.op;
  auto body = action_body(req.body, op.op, topic);
  if (!body) return R::failure(body.error());
  op.mqs_body = std::move(body.value());
  return op;
}

/// The error's status: parse_op's failures start with it ("404 ...").
rest_reply op_error(const std::string& error, const std::string& method, std::string_view path) {
  int status = std::stoi(error.substr(0, 3));
  if (status == 405) {
    auto allowed = error.substr(4);
    auto r =
        error_reply(405, "method " + method + " is not allowed on " + std::string(path) + "; use " + allowed);
    r.headers["Allow"] = allowed;
    return r;
  }
  return error_reply(status, error.substr(4));
}

/// The MQS of pool `system/pool` as the nodes describe it ("" when none runs it).
std::string mqs_of(const ordered_json& describe, const std::string& system, const std::string& address) {
  if (!describe.is_object() || !describe.contains(system) || !describe[system].is_array()) return {};
  for (auto& pool : describe[system])
    if (pool.is_object() && pool.value("id", std::string()) == address)
      return pool.value("messageQueuingSystemServer", std::string());
  return {};
}

struct lookup {
  dlq_op op;
  reply_fn reply;
  std::size_t waiting = 0;
  std::string mqs;
  std::string error;  ///< the first node that could not describe itself
};

void forward(const std::shared_ptr<lookup>& l, const mqs_http_fn& http) {
  const auto address = l->op.system + "/" + l->op.pool;
  if (l->mqs.empty()) {
    std::string why = "no node runs pool " + address + " (GET /registry/status), so its MQS is unknown";
    if (!l->error.empty()) why += "; " + l->error;
    return l->reply(error_reply(404, why));
  }
  auto base = mqs_http_base(l->mqs);
  if (!base)
    return l->reply(error_reply(502, "pool " + address + " names an MQS that is not a ws:// URL: " + l->mqs));
  mqs_call call{l->op.op == "list" || l->op.op == "show" ? "GET" : "POST", *base + l->op.mqs_path,
                l->op.mqs_body};
  http(std::move(call), [l, address](mqs_reply r) {
    if (!r.answered) {
      registry_log()->warn("dlq {} {}: MQS {} unreachable: {}", l->op.op, address, l->mqs, r.error);
      return l->reply(
          error_reply(502, "the MQS of " + address + " (" + l->mqs + ") did not answer: " + r.error));
    }
    auto body = ordered_json::parse(r.body, nullptr, false);
    if (!body.is_object())
      return l->reply(error_reply(502, "the MQS of " + address + " answered HTTP " +
                                           std::to_string(r.status) + " without a JSON object"));
    if (r.status == 404 && l->op.op == "show" && !body.contains("messages"))
      return l->reply(error_reply(404, "no dead letter \"" + l->op.id + "\" for " + address));
    if (r.status >= 300) return l->reply({r.status, std::move(body), {}});
    if (l->op.op == "show") {
      auto& messages = body["messages"];
      if (!messages.is_array() || messages.empty())
        return l->reply(error_reply(404, "no dead letter \"" + l->op.id + "\" for " + address));
      auto one = messages[0];
      one["pool"] = address;
      return l->reply({200, std::move(one), {}});
    }
    body["pool"] = address;
    body["mqs"] = l->mqs;
    if (l->op.op != "list") registry_log()->info("dlq {} {}: {}", l->op.op, address, body.dump());
    l->reply({200, std::move(body), {}});
  });
}

}  // namespace

bool is_dlq_path(std::string_view path) { return path.rfind(prefix, 0) == 0; }

void handle_dlq(node_table& nodes, const mqs_http_fn& http, const rest_request& req, reply_fn reply) {
  const auto path = net::target_path(req.target);
  auto op = parse_op(req, path);
  if (!op) {
    registry_log()->info("{} {} from {} refused: {}", req.method, path, req.remote, op.error());
    return reply(op_error(op.error(), req.method, path));
  }
  if (!http) return reply(error_reply(503, "this registry cannot reach MQS processes"));
  auto l = std::make_shared<lookup>();
  l->op = std::move(op.value());
  l->reply = std::move(reply);
  auto all = nodes.list();
  l->waiting = all.size() + 1;
  auto described = [l, http] {
    if (--l->waiting == 0) forward(l, http);
  };
  for (auto& node : all) {
    auto id = node.id;
    bool sent = nodes.request(id, protocol::node::describe{}, [l, id, described](node_answer a) {
      if (a && l->mqs.empty())
        l->mqs = mqs_of(a.value(), l->op.system, l->op.system + "/" + l->op.pool);
      else if (!a && l->error.empty())
        l->error = "node " + id + " did not describe itself: " + a.error();
      described();
    });
    if (!sent) --l->waiting;
  }
  described();
}

}  // namespace dde::registry
