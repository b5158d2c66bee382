#include "dde/core/trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

#include "dde/wire/fast_json.hpp"

namespace dde::trace {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool all_zeros(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

std::uint64_t random_word() {
  // One generator per thread: no lock on the hot path, and ids from different threads do not collide
  // more than random ones do.
  thread_local std::mt19937_64 gen{[] {
    std::random_device rd;
    return (std::uint64_t(rd()) << 32) ^ rd() ^
           std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  }()};
  return gen();
}

template <std::size_t N>
void fill_random_hex(std::array<char, N>& out) {
  do {
    for (std::size_t i = 0; i < N; i += 16) {
      auto w = random_word();
      for (std::size_t k = 0; k < 16 && i + k < N; ++k, w >>= 4) out[i + k] = hex_digits[w & 15];
    }
  } while (all_zeros({out.data(), N}));
}

std::atomic<span_log*> active{nullptr};
std::unique_ptr<span_log> owned;

}  // namespace

std::optional<context> parse(std::string_view tp) {
  if (tp.size() < traceparent_size) return std::nullopt;
  auto version = tp.substr(0, 2);
  if (!is_lower_hex(version) || version == "ff") return std::nullopt;
  if (version == "00" && tp.size() != traceparent_size) return std::nullopt;
  if (tp.size() > traceparent_size && tp[traceparent_size] != '-') return std::nullopt;
  if (tp[2] != '-' || tp[35] != '-' || tp[52] != '-') return std::nullopt;
  auto trace_id = tp.substr(3, 32), span_id = tp.substr(36, 16), flags = tp.substr(53, 2);
  if (!is_lower_hex(trace_id) || !is_lower_hex(span_id) || !is_lower_hex(flags)) return std::nullopt;
  if (all_zeros(trace_id) || all_zeros(span_id)) return std::nullopt;
  context c;
  std::memcpy(c.trace_id.data(), trace_id.data(), 32);
  std::memcpy(c.span_id.data(), span_id.data(), 16);
  auto low = flags[1];
  int flag_bits = low <= '9' ? low - '0' : low - 'a' + 10;
  c.sampled = (flag_bits & 1) != 0;
  return c;
}

std::string format(const context& c) {
  std::string out;
  out.reserve(traceparent_size);
  out.append("00-");
  out.append(c.trace());
  out.push_back('-');
  out.append(c.span());
  out.append(c.sampled ? "-01" : "-00");
  return out;
}

std::array<char, 16> new_span_id() {
  std::array<char, 16> id;
  fill_random_hex(id);
  return id;
}

context new_trace(bool sampled) {
  context c;
  fill_random_hex(c.trace_id);
  c.span_id = new_span_id();
  c.sampled = sampled;
  return c;
}

context child_of(const context& parent) {
  context c = parent;
  c.span_id = new_span_id();
  return c;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

span_log::span_log(const std::string& path, std::string node) : node_(std::move(node)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open the span log " + path + ": " + std::strerror(errno));
}

span_log::~span_log() {
  if (fd_ >= 0) ::close(fd_);
}

std::string span_log::line(const span& s) const {
  std::string out;
  out.reserve(320);
  bool first = true;
  out.push_back('{');
  wire::append_json_member(out, first, "traceId", s.ctx.trace());
  wire::append_json_member(out, first, "spanId", s.ctx.span());
  if (!s.parent.empty()) wire::append_json_member(out, first, "parentSpanId", s.parent);
  std::string_view system = s.pool.substr(0, s.pool.find('/'));
  wire::append_json_member(out, first, "name", s.pool);
  wire::append_json_member(out, first, "kind", s.kind);
  wire::append_json_member(out, first, "node", node_);
  wire::append_json_member(out, first, "system", system);
  wire::append_json_member(out, first, "pool", s.pool.substr(std::min(s.pool.size(), system.size() + 1)));
  wire::append_json_member(out, first, "messageId", s.message_id);
  out.append(",\"startUs\":").append(std::to_string(s.start_us));
  out.append(",\"endUs\":").append(std::to_string(s.end_us));
  if (s.redelivered) out.append(",\"redelivered\":true");
  wire::append_json_member(out, first, "status", s.error.empty() ? "ok" : "error");
  if (!s.error.empty()) wire::append_json_member(out, first, "error", s.error);
  out.append("}\n");
  return out;
}

void span_log::write(const span& s) {
  if (!s.ctx.sampled) return;
  auto text = line(s);
  // One write per line: O_APPEND keeps lines whole when processes share the file. A short write (a
  // full disk) loses that span, never the message.
  if (::write(fd_, text.data(), text.size()) < 0) return;
}

span_log* active_log() { return active.load(std::memory_order_acquire); }

void set_active_log(std::unique_ptr<span_log> log) {
  active.store(log.get(), std::memory_order_release);
  owned = std::move(log);
}

void open_span_log(std::string path, std::string node) {
  if (const char* env = std::getenv("DDE_TRACE_LOG"); path.empty() && env) path = env;
  if (path.empty()) return;
  if (const char* env = std::getenv("DDE_TRACE_NODE"); node.empty() && env) node = env;
  if (node.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) node = host;
  }
  set_active_log(std::make_unique<span_log>(path, std::move(node)));
}

}  // namespace dde::trace
