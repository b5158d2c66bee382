#include "batch_reader.hpp"

#include <cstdint>
#include <utility>

#include "dde/wire/fast_json.hpp"

namespace dde::mqs {
namespace {

constexpr std::size_t max_header = 64 * 1024;

bool get_u32(std::string_view& in, std::uint32_t& v) {
  if (in.size() < 4) return false;
  auto* p = reinterpret_cast<const unsigned char*>(in.data());
  v = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
  in.remove_prefix(4);
  return true;
}

}  // namespace

const nlohmann::json& batch_entry::header() {
  if (!parsed_) {
    header_ = wire::parse_json(header_text);
    parsed_ = true;
  }
  return header_;
}

void batch_entry::reset(std::size_t at) {
  index = at;
  header_text = {};
  enqueue.reset();
  body = {};
  error.clear();
  if (std::exchange(parsed_, false)) header_ = nlohmann::json(nlohmann::json::value_t::discarded);
}

bool batch_reader::next(batch_entry& out) {
  if (broken_ || data_.empty()) return false;
  out.reset(index_++);
  auto broken = [&](std::string why) {
    out.error = std::move(why);
    broken_ = true;
    return true;
  };
  std::uint32_t hsize = 0;
  if (!get_u32(data_, hsize)) return broken("truncated record: missing header size");
  if (hsize > max_header)
    return broken("header of " + std::to_string(hsize) + " bytes exceeds 65536 (is this a record batch?)");
  if (data_.size() < hsize) return broken("truncated record: header shorter than its size");
  auto header_text = data_.substr(0, hsize);
  data_.remove_prefix(hsize);
  std::uint32_t bsize = 0;
  if (!get_u32(data_, bsize)) return broken("truncated record: missing body size");
  if (data_.size() < bsize) return broken("truncated record: body shorter than its size");
  out.body = data_.substr(0, bsize);
  data_.remove_prefix(bsize);
  out.header_text = header_text;

  if (bsize <= max_body_ && (out.enqueue = parse_enqueue_header(header_text))) return true;
  auto& header = out.header();
  if (header.is_discarded()) {
    out.error = "header is not valid JSON";
  } else if (!header.is_object()) {
    out.error = "header is not a JSON object";
  } else if (auto a = header.find("action"); a == header.end() || !a->is_string()) {
    out.error = "header has no string \"action\"";
  } else if (bsize > max_body_) {
    out.error =
        "body of " + std::to_string(bsize) + " bytes exceeds --max-message " + std::to_string(max_body_);
  }
  return true;
}

}  // namespace dde::mqs
