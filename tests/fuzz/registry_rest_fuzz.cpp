// The registry's REST handlers with two connected nodes that answer whatever they are asked.
// Input: one byte picks the method, then the target up to a newline, then the body; the bytes after
// a second newline script the nodes' answers (ok or an error status). Properties: every request is
// answered exactly once, with a status in 200..599 and a JSON object body; an error carries a
// string "error"; nothing crashes or leaks, whatever the nodes answer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "registry_fakes.hpp"
#include "rest_api.hpp"

using dde::registry::node_info;
using dde::registry::node_table;
using dde::registry::response_frame;
using dde::registry::rest_api;
using dde::registry::rest_reply;
using dde::registry::rest_request;
using dde::registry::test::recording_link;

namespace {

struct fake_node {
  std::uint64_t conn;
  std::shared_ptr<recording_link> link = std::make_shared<recording_link>();
  std::size_t answered = 0;
};

std::string_view take_line(std::string_view& rest) {
  auto nl = rest.find('\n');
  auto line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const methods[] = {"GET", "POST", "PUT", "DELETE"};
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  rest_request req;
  req.method = methods[data[0] % 4];
  req.target = std::string(take_line(rest));
  req.body = std::string(take_line(rest));
  req.remote = "127.0.0.1:1";
  std::string_view script = rest;

  node_table table{node_table::options{}};
  fake_node nodes[2] = {{1}, {2}};
  const char* const ids[2] = {"1000", "2000"};
  for (int i = 0; i < 2; ++i) {
    node_info info;
    info.ip = "127.0.0.1";
    info.port = std::to_string(50000 + i);
    info.name = "node-" + std::to_string(i);
    info.activator = "ws://127.0.0.1:" + std::to_string(42000 + i) + "/activator";
    table.add(nodes[i].conn, nodes[i].link, info, std::string(ids[i]));
  }

  int replies = 0;
  rest_reply last;
  rest_api api(table);
  api.handle(req, [&](rest_reply r) {
    ++replies;
    last = std::move(r);
  });

  // The nodes answer what they were asked (a migration asks one, then the other), as scripted.
  for (int round = 0; round < 8 && replies == 0; ++round) {
    bool asked = false;
    for (auto& node : nodes) {
      auto requests = node.link->requests();
      for (; node.answered < requests.size(); ++node.answered) {
        asked = true;
        response_frame answer;
        answer.id = requests[node.answered].value("id", std::uint64_t{0});
        unsigned char choice = script.empty() ? 0 : static_cast<unsigned char>(script.front());
        if (!script.empty()) script.remove_prefix(1);
        if (choice % 3 == 0) {
          answer.ok = true;
          answer.result = {{"ok", true}};
        } else {
          answer.status = 400 + choice % 200;
          answer.error = "scripted failure";
        }
        (void)table.on_response(node.conn, std::move(answer));
      }
    }
    if (!asked) break;
  }
  for (auto& node : nodes) table.remove(node.conn);

  DDE_FUZZ_CHECK(replies == 1);
  DDE_FUZZ_CHECK(last.status >= 200 && last.status <= 599);
  DDE_FUZZ_CHECK(last.body.is_object() || last.body.is_array());
  if (last.status >= 400) {
    auto error = last.body.find("error");
    DDE_FUZZ_CHECK(error != last.body.end() && error->is_string() && !error->get<std::string>().empty());
  }
  // What the transport does with it (registry_service.cpp): bad UTF-8 quoted from the target is replaced.
  (void)last.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
