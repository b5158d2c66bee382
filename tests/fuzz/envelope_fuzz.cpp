// The envelope codec: what a worker's message becomes on the broker, and anything a plain AMQP
// publisher may put there. Properties: decoding never fails (a foreign payload becomes a body from
// "external"); encode(decode(x)) is a fixed point (decoding it again gives the same envelope); base64
// round-trips; split_envelope (payload + AMQP props, as the broker carries it) joins back into the
// same envelope, and a delivery's props and payload, whatever they are, join without throwing; a
// body goes out as exactly nlohmann's compact dump of it (wire::dump_json).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dde/core/base64.hpp"
#include "dde/envelope.hpp"
#include "dde/wire/fast_json.hpp"
#include "fuzz_check.hpp"

namespace {

bool same(const dde::envelope& a, const dde::envelope& b) {
  return a.id == b.id && a.from == b.from && a.to == b.to && a.reply_to == b.reply_to &&
         a.ask_instance == b.ask_instance && a.ask_worker == b.ask_worker && a.in_reply_to == b.in_reply_to &&
         a.to_worker == b.to_worker && a.body == b.body && a.bytes == b.bytes &&
         a.dead_letter == b.dead_letter && a.is_bytes == b.is_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const dde::envelope first = dde::decode_envelope(input);
  const std::string encoded = dde::encode_envelope(first);
  const dde::envelope second = dde::decode_envelope(encoded);
  DDE_FUZZ_CHECK(same(first, second));
  DDE_FUZZ_CHECK(dde::encode_envelope(second) == encoded);
  DDE_FUZZ_CHECK(dde::wire::dump_json(first.body) ==
                 first.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));

  // Split for the broker and joined again: the same envelope (an empty sender reads as "external",
  // an empty recipient as the topic's address).
  dde::envelope expected = first;
  if (expected.from.empty()) expected.from = "external";
  if (expected.to.empty()) expected.to = "sys/consumer";
  const auto split = dde::split_envelope(first, "sys.consumer");
  const auto props = nlohmann::json::parse(split.props, nullptr, false);
  DDE_FUZZ_CHECK(props.is_object());
  DDE_FUZZ_CHECK(same(dde::join_envelope(props, "sys.consumer", split.payload), expected));

  // Arbitrary props (the input's first line, when it is JSON) and payload (the rest).
  const auto cut = input.find('\n');
  if (cut != std::string_view::npos) {
    const auto any = nlohmann::json::parse(input.substr(0, cut), nullptr, false);
    (void)dde::join_envelope(any.is_discarded() ? nlohmann::json() : any, "sys.consumer",
                             std::string(input.substr(cut + 1)));
  }

  const std::string b64 = dde::base64_encode(input);
  std::string back;
  DDE_FUZZ_CHECK(dde::base64_decode(b64, back));
  DDE_FUZZ_CHECK(back == input);
  std::string ignored;
  (void)dde::base64_decode(input, ignored);
  return 0;
}
