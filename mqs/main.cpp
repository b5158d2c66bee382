// dde-mqs: parses the command line, sets up logging and runs the MQS until SIGINT/SIGTERM.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>

#include "dde/core/daemon.hpp"
#include "dde/core/net/elastic_threads.hpp"
#include "dde/log.hpp"
#include "dde/mqs/config.hpp"
#include "dde/mqs/mqs_server.hpp"
#include "dde/net/auth.hpp"

namespace {

/// Serves until SIGINT or SIGTERM; the exit status.
int run(const dde::mqs::config& cfg) {
  auto log = dde::logger("mqs");
  // Before any thread starts: they inherit it.
  if (auto err = dde::apply_scheduling(cfg.scheduling)) log->warn("{}; the threads stay as they were", *err);
  dde::net::warn_if_exposed(*log,
                            {"dde-mqs", cfg.listen, cfg.tls.enabled(), true, !cfg.cluster_secret.empty()});
  try {
    boost::asio::io_context io(static_cast<int>(cfg.threads));
    dde::mqs::mqs_server server(io, cfg);
    if (auto ec = server.start()) {
      log->error("cannot listen on {}:{}: {}", cfg.listen, cfg.port, ec.message());
      return 1;
    }
    log->info("listening on {}://{}:{}/mqs (broker {}://{}:{} vhost {} as {}, prefetch {})",
              cfg.tls.enabled() ? "wss" : "ws", cfg.listen, server.port(), cfg.broker_tls ? "amqps" : "amqp",
              cfg.broker_host, cfg.broker_port, cfg.vhost, cfg.user, cfg.prefetch);
    dde::notify_ready("listening on port " + std::to_string(server.port()));

    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      log->info("signal {}: stopping", sig);
      dde::notify_stopping();
      server.stop_accepting();
      io.stop();
    });
    // One thread runs the WebSocket side and the dequeuer; the others join while it lags (a broker
    // RPC of the dequeuer that takes long, a burst of hosts).
    dde::net::elastic_options elastic{int(cfg.threads), cfg.thread_lag};
    elastic.metric_prefix = "dde_mqs";
    elastic.thread_name = "mqs-io";
    dde::net::elastic_threads threads(io, elastic);
    threads.start();
    threads.wait_stopped();
    server.stop();
    log->info("stopped");
  } catch (const std::exception& e) {
    log->error("fatal: {}", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto cl = dde::mqs::parse_command_line(argc, argv);
  if (cl.help) {
    std::fputs(dde::mqs::help_text().c_str(), stdout);
    return 0;
  }
  if (cl.version) {
    std::puts(dde::mqs::version_text().c_str());
    return 0;
  }
  if (!cl.error.empty()) {
    std::fprintf(stderr, "dde-mqs: %s\nTry 'dde-mqs --help'.\n", cl.error.c_str());
    return 2;
  }
  auto& cfg = cl.cfg;
  try {
    cfg.cluster_secret = dde::net::load_secret(cfg.cluster_secret_file, dde::net::cluster_secret_env);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dde-mqs: %s\n", e.what());
    return 2;
  }
  dde::set_log_level(cfg.log_level);
  return run(cfg);
}
