#pragma once
// 127.0.0.1:port as a socket address, for the test helpers that use raw sockets.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace dde::test::detail {

inline sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace dde::test::detail
