#pragma once
// Whether a WebSocket endpoint accepts a handshake: for the tests of refusals (secrets, TLS).

#include <cstdint>
#include <map>
#include <string>

namespace dde::test {

/// Whether a WebSocket opens at ws://127.0.0.1:port/path with `headers` on the handshake (it is
/// closed again at once); waits at most 10 s.
bool ws_opens(std::uint16_t port, const std::string& path, std::map<std::string, std::string> headers = {});

}  // namespace dde::test
