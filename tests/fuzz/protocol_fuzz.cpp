// dde_protocol's decoders on hostile input. The first byte picks one: the MQS's request decoder (its
// hand reader of enqueue headers checked against the JSON reading), the host's record decoder (its
// hand reader of deliver headers likewise), the node's registry-frame decoder, the pool spec, the
// host's /control request decoder, or either end of the remote-worker link. Properties: nothing
// crashes or leaks, and whatever decodes survives a round trip: encoding it and decoding that again
// gives the same encoding (a field one side writes and the other drops would break it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dde/protocol/control_frames.hpp"
#include "dde/protocol/deployer_frames.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/protocol/node_frames.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/wire/fast_json.hpp"
#include "dde/wire/record.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace dde;

/// A request as a host would write it.
std::string encode_request(const mqs::request& req, std::string_view body) {
  std::string out;
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, mqs::enqueue_request>)
          mqs::append_enqueue(out, r.topic, r.mode, r.seq, mqs::props_json(r.props), body);
        else
          mqs::append(out, r);
      },
      req);
  return out;
}

/// Decodes the batch's records as the MQS does; the re-encoding of every valid one. Whatever the
/// hand reader of enqueue headers accepts, the JSON reading gives the same request.
std::string requests_round(std::string_view batch) {
  for (auto& rec : wire::split_batch(batch, 1 << 20).records) {
    if (auto fast = mqs::parse_enqueue_header(rec.header)) {
      auto json = wire::parse_json(rec.header);
      DDE_FUZZ_CHECK(!json.is_discarded());
      auto slow = mqs::parse_request(json);
      DDE_FUZZ_CHECK(slow.req && std::holds_alternative<mqs::enqueue_request>(*slow.req));
      DDE_FUZZ_CHECK(std::get<mqs::enqueue_request>(*slow.req) == *fast);
    }
  }
  std::string out;
  for (auto& rec : wire::decode_batch(batch, 1 << 20).records) {
    auto parsed = mqs::parse_request(rec.header);
    if (parsed.req) out += encode_request(*parsed.req, rec.body);
  }
  return out;
}

/// A record as the MQS would write it.
std::string encode_record(const mqs::mqs_record& rec, std::string_view body) {
  std::string out;
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, mqs::deliver_record>) {
          mqs::message_props props = r.props;
          props.published_us = r.published_us;
          mqs::append_deliver(out, r.topic, r.tag, r.redelivered, body, props);
        } else if constexpr (std::is_same_v<T, mqs::confirm_record>) {
          mqs::append_confirm(out, r.seqs);
        } else if constexpr (std::is_same_v<T, mqs::reject_record>) {
          mqs::append_reject(out, r.seqs, r.error);
        } else if constexpr (std::is_same_v<T, mqs::depth_record>) {
          mqs::append_depth(out, r.topic, std::uint32_t(r.messages), std::uint32_t(r.consumers), r.error);
        } else if constexpr (std::is_same_v<T, mqs::pause_record>) {
          mqs::append_pause(out, r.topic, r.ms, r.reason, r.origin);
        } else if constexpr (std::is_same_v<T, mqs::welcome_record>) {
          mqs::append_welcome(out, r.mqs, r.binary);
        } else {
          mqs::append_error(out, r.error, r.record, r.header.is_null() ? nullptr : &r.header);
        }
      },
      rec);
  return out;
}

/// Decodes the batch's records as a host does (a deliver header without a JSON tree when it can);
/// the re-encoding of every valid one. Whatever the hand reader accepts, the JSON reading gives the
/// same record.
std::string records_round(std::string_view batch) {
  std::string out;
  for (auto& rec : wire::split_batch(batch, 1 << 20).records) {
    if (auto fast = mqs::parse_deliver_header(rec.header)) {
      auto json = wire::parse_json(rec.header);
      DDE_FUZZ_CHECK(!json.is_discarded());
      auto slow = mqs::parse_mqs_record(json);
      DDE_FUZZ_CHECK(slow && std::holds_alternative<mqs::deliver_record>(slow.value()));
      DDE_FUZZ_CHECK(std::get<mqs::deliver_record>(slow.value()) == *fast);
    }
    auto parsed = mqs::read_mqs_record(rec.header);
    if (!parsed) continue;
    if (auto* d = std::get_if<mqs::deliver_record>(&parsed.value())) {
      // Any delivery, however it came, reads back the same from the binary header.
      mqs::message_props props = d->props;
      props.published_us = d->published_us;
      std::string binary;
      mqs::append_deliver(binary, d->topic, d->tag, d->redelivered, rec.body, props,
                          mqs::deliver_header::binary);
      auto framed = wire::split_batch(binary, 1 << 20);
      if (framed.error.empty()) {  // (a header over the 64 KiB limit: too big either way)
        DDE_FUZZ_CHECK(framed.records.size() == 1 && framed.records[0].body == rec.body);
        auto again = mqs::read_mqs_record(framed.records[0].header);
        DDE_FUZZ_CHECK(again && std::holds_alternative<mqs::deliver_record>(again.value()));
        DDE_FUZZ_CHECK(std::get<mqs::deliver_record>(again.value()) == *d);
      }
    }
    out += encode_record(parsed.value(), rec.body);
  }
  return out;
}

std::string frame_round(std::string_view text) {
  auto parsed = protocol::parse_registry_frame(text);
  if (!parsed) return {};
  return std::visit(
      [](const auto& f) -> std::string {
        using T = std::decay_t<decltype(f)>;
        if constexpr (std::is_same_v<T, protocol::bad_request>)
          return protocol::encode(protocol::response_frame{f.id, false, nullptr, 400, f.error});
        else
          return protocol::encode(f);
      },
      parsed.value());
}

std::string control_round(std::string_view text) {
  auto parsed = protocol::parse_control_request(text);
  if (!parsed) return {};
  auto* frame = std::get_if<protocol::control_request_frame>(&parsed.value());
  return frame ? protocol::encode(*frame) : std::string();
}

std::string proxy_round(std::string_view text) {
  auto parsed = protocol::parse_proxy_frame(text);
  return parsed ? protocol::encode(parsed.value()) : std::string();
}

std::string deployer_round(std::string_view text) {
  auto parsed = protocol::parse_deployer_frame(text);
  return parsed ? protocol::encode(parsed.value()) : std::string();
}

std::string spec_round(std::string_view text) {
  auto body = wire::parse_json(text);
  auto spec = parse_pool_spec(body, "fuzz");
  return spec ? to_deploy_body(spec.value()).dump() : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto stable = [](auto round, std::string_view in) {
    auto once = round(in);
    if (!once.empty()) DDE_FUZZ_CHECK(round(once) == once);
  };
  switch (data[0] % 7) {
    case 0: {
      auto once = requests_round(input);
      DDE_FUZZ_CHECK(requests_round(once) == once);
      break;
    }
    case 1: {
      auto once = records_round(input);
      DDE_FUZZ_CHECK(records_round(once) == once);
      break;
    }
    case 2: {
      auto once = frame_round(input);
      if (!once.empty() && once.find("\"type\":\"response\"") == std::string::npos)
        DDE_FUZZ_CHECK(frame_round(once) == once);
      break;
    }
    case 3: stable(spec_round, input); break;
    case 4: stable(control_round, input); break;
    case 5: stable(proxy_round, input); break;
    default: stable(deployer_round, input); break;
  }
  return 0;
}
