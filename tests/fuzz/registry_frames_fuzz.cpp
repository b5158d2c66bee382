// The registry's node WebSocket endpoint: text frames from two connections, one frame per line; the
// first byte of a line picks the connection. Properties: nothing crashes or leaks; at most the two
// connections are registered; after both close the table is empty.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "node_endpoint.hpp"
#include "registry_fakes.hpp"

using dde::registry::node_endpoint;
using dde::registry::node_table;
using dde::registry::test::recording_link;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  node_table table{node_table::options{}};
  node_endpoint endpoint{table};
  endpoint.on_open(1, "127.0.0.1:40001", std::make_shared<recording_link>());
  endpoint.on_open(2, "127.0.0.1:40002", std::make_shared<recording_link>());

  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.empty()) continue;
    const std::uint64_t conn = 1 + static_cast<unsigned char>(line[0]) % 2;
    line.remove_prefix(1);
    if (line == "B")
      endpoint.on_binary(conn);
    else
      endpoint.on_text(conn, std::string(line));
    DDE_FUZZ_CHECK(table.size() <= 2);
  }
  endpoint.on_close(1, "fuzz");
  endpoint.on_close(2, "fuzz");
  DDE_FUZZ_CHECK(table.size() == 0);
  return 0;
}
