#include "dde/protocol/deployer_frames.hpp"

namespace dde::protocol {
namespace {

using json = nlohmann::json;

struct reader {
  const json& frame;
  std::string error;  ///< the first bad field

  const json* find(const char* key) const {
    auto it = frame.find(key);
    return it == frame.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(const char* key, const char* what) {
    if (error.empty()) error = std::string("field \"") + key + "\" must be " + what;
  }
  std::uint64_t number(const char* key) {
    auto f = find(key);
    if (!f || !f->is_number_unsigned()) {
      fail(key, "a non-negative whole number");
      return 0;
    }
    return f->get<std::uint64_t>();
  }
  std::string text(const char* key, bool required = true) {
    auto f = find(key);
    if (f && f->is_string()) return f->get<std::string>();
    if (required || f) fail(key, "a string");
    return {};
  }
  bool flag(const char* key) {
    auto f = find(key);
    if (!f) return false;
    if (!f->is_boolean()) fail(key, "true or false");
    return f->is_boolean() && f->get<bool>();
  }
  envelope env() { return decode_envelope(text("envelope")); }
  std::chrono::milliseconds ms(const char* key) {
    auto f = find(key);
    if (!f) return std::chrono::milliseconds(0);
    if (!f->is_number_integer() || f->get<long long>() < 0)
      fail(key, "a non-negative whole number of milliseconds");
    return std::chrono::milliseconds(f->is_number_integer() ? std::max(0LL, f->get<long long>()) : 0);
  }
};

constexpr const char* directive_names[] = {"resume", "restart", "stop"};

template <class Frame>
result<Frame> finish(reader& r, Frame f) {
  if (!r.error.empty()) return result<Frame>::failure(r.error);
  return f;
}

json object_of(std::string_view text, std::string& type) {
  auto frame = json::parse(text, nullptr, false);
  if (frame.is_discarded() || !frame.is_object()) return json(json::value_t::discarded);
  auto t = frame.find("type");
  type = t != frame.end() && t->is_string() ? t->get<std::string>() : std::string();
  return frame;
}

struct proxy_writer {
  json operator()(const proxy::spawn& f) const {
    return {{"type", "spawn"},
            {"protocol", f.protocol},
            {"spec", f.spec},
            {"index", f.index},
            {"instance", f.instance}};
  }
  json operator()(const proxy::message& f) const {
    return {{"type", "message"},
            {"delivery", f.delivery},
            {"envelope", encode_envelope(f.env)},
            {"redelivered", f.redelivered}};
  }
  json operator()(const proxy::reply& f) const {
    return {{"type", "reply"}, {"envelope", encode_envelope(f.env)}};
  }
  json operator()(const proxy::supervise& f) const {
    return {{"type", "supervise"}, {"directive", directive_names[int(f.what)]}, {"delayMs", f.delay.count()}};
  }
};

struct deployer_writer {
  json operator()(const deployer::spawned& f) const {
    return {{"type", "spawned"}, {"workerId", f.worker_id}};
  }
  json operator()(const deployer::error& f) const { return {{"type", "error"}, {"error", f.error}}; }
  json operator()(const deployer::done& f) const { return {{"type", "done"}, {"delivery", f.delivery}}; }
  json operator()(const deployer::failed& f) const {
    return {{"type", "failed"}, {"delivery", f.delivery}, {"error", f.error}, {"workerId", f.worker_id}};
  }
  json operator()(const deployer::rate_limited& f) const {
    return {{"type", "rateLimited"},
            {"delivery", f.delivery},
            {"delayMs", f.delay.count()},
            {"reason", f.reason},
            {"envelope", encode_envelope(f.env)},
            {"redelivered", f.redelivered}};
  }
  json operator()(const deployer::up& f) const { return {{"type", "up"}, {"workerId", f.worker_id}}; }
  json operator()(const deployer::crashed& f) const {
    return {{"type", "crashed"}, {"delivery", f.delivery}, {"error", f.error}};
  }
  json operator()(const deployer::enqueue& f) const {
    return {{"type", "enqueue"},
            {"topic", f.topic},
            {"mode", to_string(f.mode)},
            {"envelope", encode_envelope(f.env)}};
  }
};

}  // namespace

std::string encode(const proxy_frame& f) {
  return std::visit(proxy_writer{}, f).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode(const deployer_frame& f) {
  return std::visit(deployer_writer{}, f).dump(-1, ' ', false, json::error_handler_t::replace);
}

result<proxy_frame> parse_proxy_frame(std::string_view text) {
  using out = result<proxy_frame>;
  std::string type;
  auto frame = object_of(text, type);
  if (frame.is_discarded()) return out::failure("frame is not a JSON object");
  reader r{frame, {}};
  if (type == "spawn") {
    auto protocol = r.find("protocol");
    if (!protocol || !protocol->is_number_integer() ||
        protocol->get<long long>() != deployer_protocol_version)
      return out::failure("unsupported protocol version " +
                          (protocol ? protocol->dump() : std::string("null")));
    auto spec = r.find("spec");
    if (!spec || !spec->is_object()) return out::failure("field \"spec\" must be the pool spec, an object");
    proxy::spawn s{*spec, 0, {}, deployer_protocol_version};
    if (r.find("index")) s.index = std::size_t(r.number("index"));
    s.instance = r.text("instance");
    return finish<proxy_frame>(r, s);
  }
  if (type == "message") {
    proxy::message m;
    m.delivery = r.number("delivery");
    m.env = r.env();
    m.redelivered = r.flag("redelivered");
    return finish<proxy_frame>(r, std::move(m));
  }
  if (type == "reply") return finish<proxy_frame>(r, proxy::reply{r.env()});
  if (type == "supervise") {
    auto name = r.text("directive");
    proxy::supervise s{proxy::directive::resume, r.ms("delayMs")};
    if (name == "restart")
      s.what = proxy::directive::restart;
    else if (name == "stop")
      s.what = proxy::directive::stop;
    else if (name != "resume")
      r.fail("directive", "resume, restart or stop");
    return finish<proxy_frame>(r, s);
  }
  return out::failure("unknown frame type \"" + type.substr(0, 100) + "\"");
}

result<deployer_frame> parse_deployer_frame(std::string_view text) {
  using out = result<deployer_frame>;
  std::string type;
  auto frame = object_of(text, type);
  if (frame.is_discarded()) return out::failure("frame is not a JSON object");
  reader r{frame, {}};
  if (type == "spawned") return finish<deployer_frame>(r, deployer::spawned{r.text("workerId")});
  if (type == "error") return finish<deployer_frame>(r, deployer::error{r.text("error")});
  if (type == "done") return finish<deployer_frame>(r, deployer::done{r.number("delivery")});
  if (type == "failed") {
    deployer::failed f;
    f.delivery = r.number("delivery");
    f.error = r.text("error");
    f.worker_id = r.text("workerId", false);
    return finish<deployer_frame>(r, std::move(f));
  }
  if (type == "rateLimited") {
    deployer::rate_limited f;
    f.delivery = r.number("delivery");
    f.delay = r.ms("delayMs");
    f.reason = r.text("reason", false);
    f.env = r.env();
    f.redelivered = r.flag("redelivered");
    return finish<deployer_frame>(r, std::move(f));
  }
  if (type == "up") return finish<deployer_frame>(r, deployer::up{r.text("workerId")});
  if (type == "crashed") {
    deployer::crashed f;
    f.delivery = r.number("delivery");
    f.error = r.text("error");
    return finish<deployer_frame>(r, std::move(f));
  }
  if (type == "enqueue") {
    deployer::enqueue f;
    f.topic = r.text("topic");
    auto mode = parse_delivery_mode(r.text("mode"));
    if (!mode) r.fail("mode", "at-least-once, at-most-once or reply");
    f.mode = mode.value_or(delivery_mode::at_least_once);
    f.env = r.env();
    if (r.error.empty() && !valid_topic(f.topic))
      return out::failure("invalid topic \"" + f.topic.substr(0, 200) + "\"");
    return finish<deployer_frame>(r, std::move(f));
  }
  return out::failure("unknown frame type \"" + type.substr(0, 100) + "\"");
}

}  // namespace dde::protocol
