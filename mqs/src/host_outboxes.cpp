#include "host_outboxes.hpp"

namespace dde::mqs {

void host_outboxes::pulled(client_id host, const std::shared_ptr<net::ws_connection>& conn, bool binary) {
  auto& h = hosts_[host];
  if (!h.conn) h.conn = conn;
  if (binary) h.form = deliver_header::binary;
}

std::string* host_outboxes::records(client_id host) {
  deliver_header form;
  return records(host, form);
}

std::string* host_outboxes::records(client_id host, deliver_header& form) {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return nullptr;
  if (it->second.out.empty()) dirty_.push_back(host);
  form = it->second.form;
  return &it->second.out;
}

bool host_outboxes::has_room(client_id host, std::size_t max_bytes) const {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return true;  // gone: the dispatcher drops its credit on disconnect
  return it->second.conn->queued_bytes() + it->second.out.size() < max_bytes;
}

void host_outboxes::send() {
  for (auto id : dirty_) {
    auto it = hosts_.find(id);
    if (it == hosts_.end() || it->second.out.empty()) continue;
    it->second.conn->send(std::move(it->second.out), true);
    it->second.out = std::string();
  }
  dirty_.clear();
}

}  // namespace dde::mqs
