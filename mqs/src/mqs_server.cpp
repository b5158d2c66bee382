#include "dde/mqs/mqs_server.hpp"

#include "dde/net/ws.hpp"
#include "service.hpp"

namespace dde::mqs {

struct mqs_server::impl {
  std::shared_ptr<service> svc;
  std::unique_ptr<net::server> server;
};

mqs_server::mqs_server(boost::asio::io_context& io, const config& cfg) : impl_(std::make_unique<impl>()) {
  impl_->svc = std::make_shared<service>(cfg);
  net::server_options options;
  options.host = cfg.listen;
  options.port = cfg.port;
  options.max_ws_message = cfg.max_frame;
  impl_->server = net::server::create(io, options);
  impl_->server->add_websocket("/mqs", impl_->svc);
}

mqs_server::~mqs_server() { stop(); }

std::error_code mqs_server::start() {
  impl_->svc->start();
  return impl_->server->start();
}

std::uint16_t mqs_server::port() const { return impl_->server->port(); }

void mqs_server::stop_accepting() { impl_->server->stop(); }

void mqs_server::stop() {
  impl_->server->stop();
  impl_->svc->stop();
}

}  // namespace dde::mqs
