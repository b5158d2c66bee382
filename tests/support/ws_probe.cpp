#include "ws_probe.hpp"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>

#include "dde/net/ws.hpp"

namespace dde::test {

bool ws_opens(std::uint16_t port, const std::string& path, std::map<std::string, std::string> headers) {
  struct probe : net::ws_handler {
    std::promise<bool> result;
    void on_open(const std::shared_ptr<net::ws_connection>& c) override {
      result.set_value(true);
      c->close("probe done");
    }
    void on_message(const std::shared_ptr<net::ws_connection>&, std::string, bool) override {}
    void on_close(const std::shared_ptr<net::ws_connection>&, const std::string&) override {}
  };
  boost::asio::io_context io;
  auto p = std::make_shared<probe>();
  auto opened = p->result.get_future();
  net::client_options o;
  o.headers = std::move(headers);
  net::ws_connect(
      io, {"127.0.0.1", port, path}, p, [p](const std::string&) { p->result.set_value(false); }, o);
  io.run_for(std::chrono::seconds(10));
  return opened.wait_for(std::chrono::seconds(0)) == std::future_status::ready && opened.get();
}

}  // namespace dde::test
