// The host -> MQS wire: a WebSocket message as the MQS reads it. Every record goes through the
// batch reader, the request validation and (for a body) the envelope decoder. Properties: nothing
// crashes or leaks; decode_batch and batch_reader agree on where the good prefix ends; a record
// with an error has no request, a good request has no error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "batch_reader.hpp"
#include "dde/envelope.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/wire/record.hpp"
#include "fuzz_check.hpp"
#include "pause_broadcast.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view batch(reinterpret_cast<const char*>(data), size);
  constexpr std::size_t max_body = 4096;

  const auto decoded = dde::wire::decode_batch(batch, max_body);
  DDE_FUZZ_CHECK(decoded.error.empty() || decoded.bad_index == decoded.records.size());

  dde::mqs::batch_reader reader(batch, max_body);
  dde::mqs::batch_entry entry;
  std::size_t good_prefix = 0;
  bool seen_bad = false;
  while (reader.next(entry)) {
    DDE_FUZZ_CHECK(entry.body.size() <= size);
    if (!entry.error.empty()) {
      seen_bad = true;
      continue;
    }
    if (!seen_bad) ++good_prefix;
    DDE_FUZZ_CHECK(!entry.header().is_discarded());
    const auto parsed = dde::mqs::parse_request(entry.header());
    DDE_FUZZ_CHECK(parsed.req.has_value() != !parsed.error.empty());
    // An enqueue read without a JSON tree is the request the JSON reading gives.
    if (entry.enqueue)
      DDE_FUZZ_CHECK(parsed.req && std::holds_alternative<dde::mqs::enqueue_request>(*parsed.req) &&
                     std::get<dde::mqs::enqueue_request>(*parsed.req) == *entry.enqueue);
    (void)dde::mqs::enqueue_seq(entry.header());
    if (!entry.body.empty()) {
      (void)dde::decode_envelope(entry.body);
      (void)dde::mqs::decode_pause_broadcast(entry.body);
    }
  }
  // Both readers stop at the first bad record; the strict one returns exactly the good prefix.
  DDE_FUZZ_CHECK(decoded.records.size() == good_prefix);
  return 0;
}
