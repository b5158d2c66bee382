// dde-registry: parses the command line, sets up logging and runs the registry until SIGINT/SIGTERM.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>

#include "dde/core/daemon.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "dde/registry/registry_config.hpp"
#include "dde/registry/registry_service.hpp"

int main(int argc, char** argv) {
  auto cl = dde::registry::parse_command_line(argc, argv);
  if (cl.help || cl.version) {
    std::fputs(cl.help_text.c_str(), stdout);
    return 0;
  }
  if (!cl.error.empty()) {
    std::fprintf(stderr, "dde-registry: %s\nTry 'dde-registry --help'.\n", cl.error.c_str());
    return 2;
  }
  const auto& cfg = cl.cfg;
  dde::set_log_level(cfg.log_level);
  auto log = dde::logger("registry");
  if (cfg.token_on_command_line)
    log->warn(
        "a token was given on the command line, where ps shows it to every user of this machine: "
        "prefer --admin-token-file / --read-token-file or DDE_ADMIN_TOKEN / DDE_READ_TOKEN");
  dde::net::warn_if_exposed(*log, {"dde-registry", cfg.listen, cfg.tls.enabled(), !cfg.admin_token.empty(),
                                   !cfg.cluster_secret.empty()});
  try {
    boost::asio::io_context io(1);
    dde::registry::registry_service service(io, cfg);
    if (auto ec = service.start()) {
      log->error("cannot listen on {}:{}: {}", cfg.listen, cfg.port, ec.message());
      return 1;
    }
    bool tls = cfg.tls.enabled();
    log->info(
        "listening on {}://{}:{} (REST /registry/..., nodes at {}://{}:{}/registry; request timeout {} ms{}; "
        "tokens {}, cluster secret {})",
        tls ? "https" : "http", cfg.listen, service.port(), tls ? "wss" : "ws", cfg.listen, service.port(),
        cfg.request_timeout.count(), cfg.tls.verify_client ? ", client certificates required" : "",
        cfg.admin_token.empty() ? "off" : (cfg.read_token.empty() ? "admin" : "admin+read"),
        cfg.cluster_secret.empty() ? "off" : "on");
    dde::notify_ready("listening on port " + std::to_string(service.port()));
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      log->info("signal {}: stopping", sig);
      dde::notify_stopping();
      service.stop();
      io.stop();
    });
    io.run();
    log->info("stopped");
  } catch (const std::exception& e) {
    log->error("fatal: {}", e.what());
    return 1;
  }
  return 0;
}
