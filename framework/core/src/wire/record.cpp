#include "dde/wire/record.hpp"

#include <cstdint>
#include <cstring>

#include "dde/wire/fast_json.hpp"

namespace dde::wire {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  char b[4] = {char(v & 0xff), char((v >> 8) & 0xff), char((v >> 16) & 0xff), char((v >> 24) & 0xff)};
  out.append(b, 4);
}

bool get_u32(std::string_view& in, std::uint32_t& v) {
  if (in.size() < 4) return false;
  auto* p = reinterpret_cast<const unsigned char*>(in.data());
  v = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
  in.remove_prefix(4);
  return true;
}

constexpr std::size_t max_header = 64 * 1024;

}  // namespace

void append_record(std::string& out, const nlohmann::json& header, std::string_view body) {
  append_raw_record(out, header.dump(), body);
}

void append_raw_record(std::string& out, std::string_view header_json, std::string_view body) {
  out.reserve(out.size() + 8 + header_json.size() + body.size());
  put_u32(out, std::uint32_t(header_json.size()));
  out.append(header_json.data(), header_json.size());
  put_u32(out, std::uint32_t(body.size()));
  out.append(body.data(), body.size());
}

framed_batch split_batch(std::string_view data, std::size_t max_body) {
  framed_batch result;
  while (!data.empty()) {
    auto fail = [&](std::string why) {
      result.error = std::move(why);
      result.bad_index = result.records.size();
      return result;
    };
    std::uint32_t hsize = 0;
    if (!get_u32(data, hsize)) return fail("truncated record: missing header size");
    if (hsize > max_header) return fail("header of " + std::to_string(hsize) + " bytes exceeds 65536");
    if (data.size() < hsize) return fail("truncated record: header shorter than its size");
    auto header = data.substr(0, hsize);
    data.remove_prefix(hsize);
    std::uint32_t bsize = 0;
    if (!get_u32(data, bsize)) return fail("truncated record: missing body size");
    if (bsize > max_body)
      return fail("body of " + std::to_string(bsize) + " bytes exceeds the limit of " +
                  std::to_string(max_body));
    if (data.size() < bsize) return fail("truncated record: body shorter than its size");
    result.records.push_back({header, data.substr(0, bsize)});
    data.remove_prefix(bsize);
  }
  return result;
}

decoded_batch decode_batch(std::string_view data, std::size_t max_body) {
  auto framed = split_batch(data, max_body);
  decoded_batch result;
  result.records.reserve(framed.records.size());
  for (auto& f : framed.records) {
    auto fail = [&](std::string why) {
      result.error = std::move(why);
      result.bad_index = result.records.size();
      return result;
    };
    record r;
    r.header = parse_json(f.header);
    if (r.header.is_discarded()) return fail("header is not valid JSON");
    if (!r.header.is_object()) return fail("header is not a JSON object");
    auto action = r.header.find("action");
    if (action == r.header.end() || !action->is_string()) return fail("header has no string \"action\"");
    r.body.assign(f.body.data(), f.body.size());
    result.records.push_back(std::move(r));
  }
  result.error = std::move(framed.error);
  result.bad_index = framed.bad_index;
  return result;
}

}  // namespace dde::wire
