#include "header_scanner.hpp"

#include <algorithm>
#include <utility>

namespace dde::mqs {

bool scan_props(header_scanner& s, message_props& out, props_of whose) {
  if (s.literal("}")) return true;
  bool id = false, app = false, type = false, headers = false;
  std::string key;
  do {
    if (!s.string(key) || !s.literal(":")) return false;
    auto once = [](bool& seen) { return !std::exchange(seen, true); };
    if (key == "messageId") {
      if (!once(id) || !s.string(out.message_id)) return false;
    } else if (key == "appId") {
      if (!once(app) || !s.string(out.app_id)) return false;
      if (whose == props_of::delivery && out.app_id.empty())
        out.app_id = external_sender;  // as read_delivered_props
    } else if (key == "contentType") {
      if (!once(type) || !s.string(out.content_type)) return false;
    } else if (key == "headers") {
      if (!once(headers) || !s.literal("{")) return false;
      if (!s.literal("}")) {
        do {
          std::pair<std::string, std::string> h;
          if (!s.string(h.first) || !s.literal(":") || !s.string(h.second)) return false;
          // In name order, as a JSON object reads them; a repeated name is left to the JSON parser.
          auto at = std::lower_bound(out.headers.begin(), out.headers.end(), h,
                                     [](auto& a, auto& b) { return a.first < b.first; });
          if (at != out.headers.end() && at->first == h.first) return false;
          out.headers.insert(at, std::move(h));
        } while (s.literal(","));
        if (!s.literal("}")) return false;
      }
    } else {
      return false;
    }
  } while (s.literal(","));
  return s.literal("}");
}

bool enqueue_props_as_parsed(const message_props& p) {
  return props_limits_error(p).empty() && std::none_of(p.headers.begin(), p.headers.end(),
                                                       [](auto& h) { return h.first == published_header; });
}

}  // namespace dde::mqs
