// dde-test-api-server: a third-party API imitation with a rate limit and escalating penalties, for
// api_caller tests and benchmarks. Parses the command line, runs api_server until SIGINT/SIGTERM.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "api_server.hpp"
#include "dde/core/command_line.hpp"

int main(int argc, char** argv) {
  dde::command_line line(
      "dde-test-api-server",
      "An HTTP API imitation for tests: at most --limit calls in every --per-ms window, else 429 and a "
      "cessation of --penalty-ms that grows by --penalty-factor (up to --max-penalty-ms) each time it is "
      "called during one. POST /call, GET /stats, POST /reset.");
  dde::test::api_server_options o;
  std::string port_file;
  auto& app = line.app();
  app.add_option("--host", o.host, "address to listen on");
  app.add_option("--port", o.port, "port to listen on (0 picks one)")->check(CLI::Range(0, 65535));
  app.add_option("--port-file", port_file, "write the bound port to this file (after listening)");
  app.add_option("--limit", o.limits.limit, "accepted calls in every window")
      ->check(CLI::Range(1, 1000000000));
  dde::add_duration(app, "--per-ms", o.limits.per, 1, 86400000, "the window's length");
  dde::add_duration(app, "--penalty-ms", o.limits.penalty, 1, 86400000,
                    "the first cessation's length (and the quiet period that forgives it)");
  app.add_option("--penalty-factor", o.limits.penalty_factor,
                 "a call during a cessation multiplies its length by this");
  dde::add_duration(app, "--max-penalty-ms", o.limits.max_penalty, 1, 86400000, "the longest cessation");
  dde::add_duration(app, "--grace-ms", o.limits.grace, 0, 86400000,
                    "calls within this of a cessation's start are refused, not escalated (in flight)");
  dde::add_duration(app, "--work-ms", o.work, 0, 600000, "latency of each accepted call");
  app.add_option("--log-calls", o.log_calls,
                 "append one line per call to this file: EPOCH_US STATUS ID SEQ CALLER [RETRY_MS WHY]");
  if (auto exit_code = line.parse_or_exit(argc, argv)) return *exit_code;
  try {
    o.limits.validate();
  } catch (const std::exception& e) {
    std::cerr << "dde-test-api-server: " << e.what() << "\n";
    return 2;
  }
  try {
    boost::asio::io_context io(1);
    auto server = dde::test::api_server::create(io, o);
    if (auto ec = server->start()) {
      std::cerr << "dde-test-api-server: cannot listen on " << o.host << ":" << o.port << ": " << ec.message()
                << "\n";
      return 1;
    }
    if (!port_file.empty()) {
      // Written beside, then renamed: a reader never sees a half-written port.
      auto tmp = port_file + ".tmp";
      std::ofstream(tmp) << server->port() << "\n";
      if (std::rename(tmp.c_str(), port_file.c_str()) != 0)
        throw std::runtime_error("cannot write --port-file " + port_file);
    }
    std::cout << "listening on " << o.host << ":" << server->port() << std::endl;
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      server->stop();
      io.stop();
    });
    io.run();
    std::cout << "stopped: " << dde::test::to_json(server->stats()).dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "dde-test-api-server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
