#pragma once
// The hosts that pull from the dequeuer, as its loop sees them: each one's WebSocket, the form of
// `deliver` header it asked for, and the records it gets at the end of the turn (deliveries, pauses,
// errors), sent as one WebSocket message per host and turn.

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dde/net/ws.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dispatcher.hpp"

namespace dde::mqs {

class host_outboxes {
 public:
  /// A host's pull: its connection is kept (the first one seen), and `binary` turns its `deliver`
  /// headers binary from now on.
  void pulled(client_id host, const std::shared_ptr<net::ws_connection>& conn, bool binary);
  /// The host disconnected: what it had not been sent goes with it.
  void forget(client_id host) { hosts_.erase(host); }
  /// The records `host` gets at the end of this turn; nullptr for a host that never pulled.
  std::string* records(client_id host);
  /// The same, with how `host` reads `deliver` headers, in one lookup (every delivery asks).
  std::string* records(client_id host, deliver_header& form);
  /// Whether more may be queued for `host`: it is gone (nothing will be), or what its socket holds
  /// and this turn's records are under `max_bytes` (a host that does not read its socket gets no
  /// more than about one WebSocket message queued).
  bool has_room(client_id host, std::size_t max_bytes) const;
  /// Sends each host that got records this turn its records.
  void send();

 private:
  struct host {
    std::shared_ptr<net::ws_connection> conn;
    std::string out;
    deliver_header form = deliver_header::json;
  };
  std::unordered_map<client_id, host> hosts_;
  std::vector<client_id> dirty_;  ///< hosts whose `out` is not empty
};

}  // namespace dde::mqs
