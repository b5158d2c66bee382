// parse_pool_spec: a deploy body (the thesis's addIsolate, and DDE's fields) into a pool_spec, one
// section of fields at a time, in the order their errors are reported.
#include <algorithm>
#include <cctype>
#include <type_traits>

#include "dde/net/http_client.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/pool_spec.hpp"

namespace dde {
namespace {

/// The field `name` of `body`, null when it is absent or JSON null.
const nlohmann::json* field(const nlohmann::json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

// Each section reads its fields of `body` into `spec` and returns what is wrong, empty when nothing is.

/// isolateSystemName (default: the caller's system) and isolateName.
std::string parse_names(const nlohmann::json& body, const std::string& default_system, pool_spec& spec) {
  auto name_field = [&](const char* key, std::string& out, const std::string& fallback) -> std::string {
    auto f = field(body, key);
    if (!f) {
      if (fallback.empty()) return std::string("missing field \"") + key + "\"";
      out = fallback;
      return {};
    }
    if (!f->is_string()) return std::string("field \"") + key + "\" must be a string";
    out = f->get<std::string>();
    return name_error(key, out);
  };
  if (auto e = name_field("isolateSystemName", spec.system, default_system); !e.empty()) return e;
  if (auto e = name_field("isolateName", spec.isolate, {}); !e.empty()) return e;
  return {};
}

/// uri (the worker plugin) and sha256.
std::string parse_plugin(const nlohmann::json& body, pool_spec& spec) {
  auto uri = field(body, "uri");
  if (!uri)
    return std::string(
        "missing field \"uri\" (the worker plugin: a .so path, file://, http:// or https:// URI)");
  if (!uri->is_string() || uri->get_ref<const std::string&>().empty())
    return std::string("field \"uri\" must be a non-empty string");
  spec.uri = uri->get<std::string>();
  if (is_remote_uri(spec.uri) && !net::parse_http_url(spec.uri))
    return std::string("field \"uri\" is \"" + spec.uri + "\", not a valid http:// or https:// URL");
  if (auto sha = field(body, "sha256"); sha && !sha->is_null()) {
    auto valid = sha->is_string() && sha->get_ref<const std::string&>().size() == 64;
    if (valid)
      for (char c : sha->get_ref<const std::string&>())
        valid = valid && std::isxdigit(static_cast<unsigned char>(c));
    if (!valid)
      return std::string("field \"sha256\" must be the plugin's SHA-256 as 64 hexadecimal characters, got " +
                         sha->dump().substr(0, 100));
    spec.sha256 = sha->get<std::string>();
    for (auto& c : spec.sha256) c = char(std::tolower(static_cast<unsigned char>(c)));
  }
  return {};
}

/// workersPaths: "localhost" or an activator's URL each.
std::string parse_workers_paths(const nlohmann::json& body, pool_spec& spec) {
  if (auto paths = field(body, "workersPaths")) {
    if (!paths->is_array() || paths->empty())
      return std::string("field \"workersPaths\" must be a non-empty array");
    if (paths->size() > 1024) return std::string("field \"workersPaths\" has more than 1024 entries");
    spec.workers_paths.clear();
    for (auto& p : *paths) {
      if (!p.is_string()) return std::string("every entry of \"workersPaths\" must be a string");
      auto path = p.get<std::string>();
      if (path != "localhost" && !net::parse_ws_url(path))
        return std::string(
            "workersPaths entry \"" + path +
            "\" is neither \"localhost\" nor an activator URL ws://host:port/activator (wss:// with TLS)");
      // The isolate system downloads an http(s) plugin; a remote node's Isolate Deployer loads paths only.
      if (path != "localhost" && is_remote_uri(spec.uri))
        return std::string("workersPaths entry \"" + path +
                           "\": a pool whose \"uri\" is http(s) runs on \"localhost\" "
                           "workers only; give remote workers a path that exists on their node");
      spec.workers_paths.push_back(path);
    }
  }
  return {};
}

/// routerType and hashKey.
std::string parse_router(const nlohmann::json& body, pool_spec& spec) {
  if (auto router = field(body, "routerType")) {
    if (!router->is_string()) return std::string("field \"routerType\" must be a string");
    spec.router_type = router->get<std::string>();
    const auto& t = spec.router_type;
    if (t == "roundRobin" || t == "round-robin" || t == "round_robin" || t == "roundrobin") {
      spec.router = router_kind::round_robin;
    } else if (t == "random") {
      spec.router = router_kind::random;
    } else if (t == "broadcast") {
      spec.router = router_kind::broadcast;
    } else if (t == "smallestMailbox" || t == "smallest-mailbox") {
      spec.router = router_kind::smallest_mailbox;
    } else if (t == "consistentHash" || t == "consistent-hash") {
      spec.router = router_kind::consistent_hash;
    } else if (t == "scatterGather" || t == "scatter-gather") {
      spec.router = router_kind::scatter_gather;
    } else if (t == "tailChopping" || t == "tail-chopping") {
      spec.router = router_kind::tail_chopping;
    } else if (t.find('/') != std::string::npos || (t.size() > 3 && t.compare(t.size() - 3, 3, ".so") == 0)) {
      spec.router = router_kind::custom;
      spec.router_uri = t.rfind("file://", 0) == 0 ? t.substr(7) : t;
    } else {
      return std::string(
          "unknown routerType \"" + t +
          "\": use roundRobin, random, broadcast, smallestMailbox, consistentHash, scatterGather, "
          "tailChopping, or the path of a custom router .so");
    }
  }
  if (auto key = field(body, "hashKey")) {
    if (!key->is_string() || key->get_ref<const std::string&>().empty())
      return std::string("field \"hashKey\" must be the name of a message body field");
    spec.hash_key = key->get<std::string>();
  }
  if (spec.router == router_kind::consistent_hash && spec.hash_key.empty() && !field(body, "partitions"))
    return std::string(
        "routerType consistentHash needs \"hashKey\": the message body field whose value picks the worker");
  return {};
}

/// hotDeployment, args, deliveryMode, credits and the pool's timings.
std::string parse_flow(const nlohmann::json& body, pool_spec& spec) {
  if (auto hot = field(body, "hotDeployment")) {
    if (!hot->is_boolean()) return std::string("field \"hotDeployment\" must be true or false");
    spec.hot_deployment = hot->get<bool>();
  }
  if (auto args = field(body, "args")) spec.args = *args;

  if (auto mode = field(body, "deliveryMode")) {
    auto parsed = mode->is_string() ? parse_delivery_mode(mode->get<std::string>()) : std::nullopt;
    if (!parsed || *parsed == delivery_mode::reply)
      return std::string("field \"deliveryMode\" must be \"at-least-once\" or \"at-most-once\"");
    spec.mode = *parsed;
  }
  if (auto credits = field(body, "credits")) {
    if (!credits->is_number_integer() || credits->get<long long>() < 1 || credits->get<long long>() > 4096)
      return std::string("field \"credits\" must be an integer from 1 to 4096");
    spec.credits = credits->get<int>();
  }
  auto millis = [&](const char* key, std::chrono::milliseconds& out, long long min,
                    long long max) -> std::string {
    auto f = field(body, key);
    if (!f) return {};
    if (!f->is_number_integer() || f->get<long long>() < min || f->get<long long>() > max)
      return std::string("field \"") + key + "\" must be an integer from " + std::to_string(min) + " to " +
             std::to_string(max) + " (milliseconds)";
    out = std::chrono::milliseconds(f->get<long long>());
    return {};
  };
  if (auto e = millis("hotDeploymentIntervalMs", spec.hot_interval, 50, 3600000); !e.empty()) return e;
  if (auto e = millis("pingAfterMs", spec.ping_after, 0, 86400000); !e.empty()) return e;
  if (auto e = millis("pongTimeoutMs", spec.pong_timeout, 10, 600000); !e.empty()) return e;
  if (auto e = millis("tailChopDelayMs", spec.tail_chop_delay, 1, 3600000); !e.empty()) return e;
  if (first_reply_wins(spec.router))
    for (auto& path : spec.workers_paths)
      if (path != "localhost")
        return std::string(
            "workersPaths entry \"" + path + "\": routerType " + spec.router_type +
            " races copies of a message on \"localhost\" workers only (a remote worker's reply "
            "cannot be held back)");
  return {};
}

/// rate, maxInFlight and the hot-deployment records (lastGoodCopy, crashedMd5, crashReason).
std::string parse_rate(const nlohmann::json& body, pool_spec& spec) {
  if (auto rate = field(body, "rate")) {
    auto n = rate->is_object() ? rate->find("messages") : rate->end();
    auto per = rate->is_object() ? rate->find("perMs") : rate->end();
    if (!rate->is_object() || n == rate->end() || per == rate->end() || !n->is_number_integer() ||
        !per->is_number_integer() || n->get<long long>() < 1 || n->get<long long>() > 1000000 ||
        per->get<long long>() < 1 || per->get<long long>() > 86400000)
      return std::string("field \"rate\" must be {\"messages\": 1..1000000, \"perMs\": 1..86400000}");
    spec.rate_messages = n->get<std::size_t>();
    spec.rate_per = std::chrono::milliseconds(per->get<long long>());
    // A throttled worker holds one message at a time, so the pool does not hoard what it cannot start.
    if (!field(body, "credits")) spec.credits = 1;
  }
  if (auto k = field(body, "maxInFlight")) {
    if (!k->is_number_integer() || k->get<long long>() < 1 || k->get<long long>() > 1000000)
      return std::string("field \"maxInFlight\" must be an integer from 1 to 1000000");
    spec.max_in_flight = k->get<std::size_t>();
  }
  for (auto [key, out] :
       {std::pair{"lastGoodCopy", &spec.last_good_copy}, std::pair{"crashedMd5", &spec.crashed_md5},
        std::pair{"crashReason", &spec.crash_reason}}) {
    auto f = field(body, key);
    if (!f) continue;
    if (!f->is_string()) return std::string(std::string("field \"") + key + "\" must be a string");
    *out = f->get<std::string>();
  }
  return {};
}

/// backoff {retryLimit, maxDelayMs}.
std::string parse_backoff(const nlohmann::json& body, pool_spec& spec) {
  if (auto b = field(body, "backoff")) {
    if (!b->is_object())
      return std::string("field \"backoff\" must be an object {\"retryLimit\", \"maxDelayMs\"}");
    if (auto n = b->find("retryLimit"); n != b->end()) {
      if (!n->is_number_integer() || n->get<long long>() < 0 || n->get<long long>() > 1000000)
        return std::string("backoff.retryLimit must be an integer from 0 to 1000000");
      spec.backoff.retry_limit = n->get<int>();
    }
    if (auto m = b->find("maxDelayMs"); m != b->end()) {
      if (!m->is_number_integer() || m->get<long long>() < 1 || m->get<long long>() > 86400000)
        return std::string("backoff.maxDelayMs must be an integer from 1 to 86400000 (milliseconds)");
      spec.backoff.max_delay = std::chrono::milliseconds(m->get<long long>());
    }
  }
  return {};
}

/// retry {delays}, at-least-once only.
std::string parse_retry(const nlohmann::json& body, pool_spec& spec) {
  if (auto rt = field(body, "retry")) {
    auto delays = rt->is_object() ? rt->find("delays") : rt->end();
    const char* shape =
        "field \"retry\" must be {\"delays\": [ms, ...]}: 1 to 10 delays, each an integer from 1 to 86400000 "
        "(milliseconds)";
    if (!rt->is_object() || delays == rt->end() || !delays->is_array() || delays->empty() ||
        delays->size() > 10)
      return std::string(shape);
    for (auto& d : *delays) {
      if (!d.is_number_integer() || d.get<long long>() < 1 || d.get<long long>() > 86400000)
        return std::string(shape);
      spec.retry.delays.emplace_back(d.get<long long>());
    }
    if (spec.mode != delivery_mode::at_least_once)
      return std::string(
          "field \"retry\" needs deliveryMode at-least-once (a delayed message waits in a durable "
          "queue; an at-most-once message is acked when it is handed over)");
  }
  return {};
}

/// subPools {key, capacity, defaultCapacity}.
std::string parse_sub_pools(const nlohmann::json& body, pool_spec& spec) {
  if (auto sp = field(body, "subPools")) {
    auto key = sp->is_object() ? sp->find("key") : sp->end();
    if (!sp->is_object() || key == sp->end() || !key->is_string() ||
        key->get_ref<const std::string&>().empty())
      return std::string(
          "field \"subPools\" must be {\"key\": \"<body field>\", \"capacity\": {\"<value>\": n, ...}, "
          "\"defaultCapacity\": n}");
    spec.sub_pools.key = key->get<std::string>();
    auto count = [](const nlohmann::json& v) {
      return v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() <= 1000000;
    };
    if (auto c = sp->find("capacity"); c != sp->end()) {
      if (!c->is_object()) return std::string("subPools.capacity must be an object of key value -> capacity");
      for (auto& [k, v] : c->items()) {
        if (!count(v) || v.get<long long>() < 1)
          return std::string("subPools.capacity[\"" + k + "\"] must be an integer from 1 to 1000000");
        spec.sub_pools.capacity[k] = v.get<std::size_t>();
      }
    }
    if (auto d = sp->find("defaultCapacity"); d != sp->end()) {
      if (!count(*d))
        return std::string("subPools.defaultCapacity must be an integer from 0 to 1000000 (0: no limit)");
      spec.sub_pools.default_capacity = d->get<std::size_t>();
    }
  }
  return {};
}

/// failover and scale.
std::string parse_scale(const nlohmann::json& body, pool_spec& spec) {
  if (auto fo = field(body, "failover")) {
    if (!fo->is_boolean()) return std::string("field \"failover\" must be true or false");
    spec.failover = fo->get<bool>();
  }
  if (auto sc = field(body, "scale")) {
    const char* shape =
        "field \"scale\" must be {\"min\": 0..1024, \"max\": 1..1024 (>= min), \"targetBacklogPerWorker\": "
        "1..10000000, \"cooldownMs\": 0..86400000, \"sampleMs\": 50..600000}";
    if (!sc->is_object()) return std::string(shape);
    auto number = [&](const char* key, long long min, long long max, auto& out) -> bool {
      auto it = sc->find(key);
      if (it == sc->end()) return true;
      if (!it->is_number_integer() || it->template get<long long>() < min ||
          it->template get<long long>() > max)
        return false;
      out = static_cast<std::remove_reference_t<decltype(out)>>(it->template get<long long>());
      return true;
    };
    auto& s = spec.scale;
    s.min = 1;
    long long cooldown = s.cooldown.count(), sample = s.sample.count();
    if (!sc->contains("max") || !number("min", 0, 1024, s.min) || !number("max", 1, 1024, s.max) ||
        !number("targetBacklogPerWorker", 1, 10000000, s.target_backlog) ||
        !number("cooldownMs", 0, 86400000, cooldown) || !number("sampleMs", 50, 600000, sample) ||
        s.min > s.max)
      return std::string(shape);
    s.cooldown = std::chrono::milliseconds(cooldown);
    s.sample = std::chrono::milliseconds(sample);
  }
  return {};
}

/// canary, with hotDeployment.
std::string parse_canary(const nlohmann::json& body, pool_spec& spec) {
  if (auto canary = field(body, "canary")) {
    if (auto e = parse_canary_spec(*canary, spec.canary); !e.empty()) return e;
    if (!spec.hot_deployment)
      return std::string(
          "field \"canary\" needs \"hotDeployment\": true (a canary is how a new version is deployed)");
  }
  return {};
}

/// supervision {strategy, maxRestarts, maxFailures, withinMs, backoffMs, failedMessage}.
std::string parse_supervision(const nlohmann::json& body, pool_spec& spec) {
  if (auto sup = field(body, "supervision")) {
    if (!sup->is_object()) return std::string("field \"supervision\" must be an object");
    auto& s = spec.supervision;
    if (auto st = sup->find("strategy"); st != sup->end()) {
      std::string v = st->is_string() ? st->get<std::string>() : "";
      if (v == "resume")
        s.kind = strategy::resume;
      else if (v == "restart")
        s.kind = strategy::restart;
      else if (v == "stop")
        s.kind = strategy::stop;
      else if (v == "escalate")
        s.kind = strategy::escalate;
      else
        return std::string("supervision.strategy must be resume, restart, stop or escalate");
    }
    if (auto m = sup->find("maxRestarts"); m != sup->end()) {
      if (!m->is_number_integer() || m->get<long long>() < 0 || m->get<long long>() > 100000)
        return std::string("supervision.maxRestarts must be an integer from 0 to 100000");
      s.max_restarts = m->get<int>();
    }
    if (auto m = sup->find("maxFailures"); m != sup->end()) {
      if (!m->is_number_integer() || m->get<long long>() < 0 || m->get<long long>() > 1000)
        return std::string("supervision.maxFailures must be an integer from 0 to 1000 (0: no limit)");
      s.max_failures = m->get<int>();
    }
    auto sub_millis = [&](const char* key, std::chrono::milliseconds& out) -> std::string {
      auto it = sup->find(key);
      if (it == sup->end()) return {};
      if (!it->is_number_integer() || it->get<long long>() < 0 || it->get<long long>() > 86400000)
        return std::string("supervision.") + key + " must be an integer from 0 to 86400000 (milliseconds)";
      out = std::chrono::milliseconds(it->get<long long>());
      return {};
    };
    if (auto e = sub_millis("withinMs", s.within); !e.empty()) return e;
    if (auto e = sub_millis("backoffMs", s.backoff); !e.empty()) return e;
    if (auto f = sup->find("failedMessage"); f != sup->end()) {
      std::string v = f->is_string() ? f->get<std::string>() : "";
      if (v != "retry" && v != "dead-letter")
        return std::string("supervision.failedMessage must be \"retry\" or \"dead-letter\"");
      s.dead_letter = v == "dead-letter";
    }
  }
  return {};
}

}  // namespace

result<pool_spec> parse_pool_spec(const nlohmann::json& body, const std::string& default_system) {
  using r = result<pool_spec>;
  if (!body.is_object()) return r::failure("the pool spec must be a JSON object");
  pool_spec spec;
  if (auto e = parse_names(body, default_system, spec); !e.empty()) return r::failure(e);
  for (auto section :
       {parse_plugin, parse_workers_paths, parse_router, parse_flow, parse_partitions, parse_rate,
        parse_backoff, parse_retry, parse_sub_pools, parse_scale, parse_canary, parse_supervision})
    if (auto e = section(body, spec); !e.empty()) return r::failure(e);
  if (spec.retry.enabled() && spec.supervision.dead_letter)
    return r::failure(
        "field \"retry\" and supervision.failedMessage \"dead-letter\" contradict each other: a "
        "failed message is either retried after the delays or dead-lettered at once");
  return spec;
}

}  // namespace dde
