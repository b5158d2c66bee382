// dde-test-api-server: a third-party API imitation with a rate limit and escalating penalties, for
// api_caller tests and benchmarks. Parses the command line, runs api_server until SIGINT/SIGTERM.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "api_server.hpp"
#include "dde/cli.hpp"
#include "dde/daemon.hpp"

namespace {

double parse_factor(const std::string& text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument("--penalty-factor " + text + " is not a number");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  dde::cli args(
      "dde-test-api-server",
      "An HTTP API imitation for tests: at most --limit calls in every --per-ms window, else 429 and a "
      "cessation of --penalty-ms that grows by --penalty-factor (up to --max-penalty-ms) each time it is "
      "called during one. POST /call, GET /stats, POST /reset.");
  args.option("host", "127.0.0.1", "address to listen on")
      .option("port", "0", "port to listen on (0 picks one)")
      .option("port-file", "", "write the bound port to this file (after listening)")
      .option("limit", "10", "accepted calls in every window")
      .option("per-ms", "1000", "the window's length")
      .option("penalty-ms", "1000", "the first cessation's length (and the quiet period that forgives it)")
      .option("penalty-factor", "2", "a call during a cessation multiplies its length by this")
      .option("max-penalty-ms", "60000", "the longest cessation")
      .option("grace-ms", "0", "calls within this of a cessation's start are refused, not escalated (in flight)")
      .option("work-ms", "0", "latency of each accepted call")
      .option("log-calls", "", "append one line per call to this file: EPOCH_US STATUS ID SEQ CALLER [RETRY_MS WHY]");
  if (auto exit_code = dde::parse_command_line(args, argc, argv, "dde-test-api-server")) return *exit_code;
  dde::test::api_server_options o;
  try {
    o.host = args.get("host");
    o.port = std::uint16_t(args.get_int("port", 0, 65535));
    o.limits.limit = std::uint32_t(args.get_int("limit", 1, 1000000000));
    o.limits.per = std::chrono::milliseconds(args.get_int("per-ms", 1, 86400000));
    o.limits.penalty = std::chrono::milliseconds(args.get_int("penalty-ms", 1, 86400000));
    o.limits.penalty_factor = parse_factor(args.get("penalty-factor"));
    o.limits.max_penalty = std::chrono::milliseconds(args.get_int("max-penalty-ms", 1, 86400000));
    o.limits.grace = std::chrono::milliseconds(args.get_int("grace-ms", 0, 86400000));
    o.work = std::chrono::milliseconds(args.get_int("work-ms", 0, 600000));
    o.log_calls = args.get("log-calls");
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
    if (!args.get("port-file").empty()) {
      // Written beside, then renamed: a reader never sees a half-written port.
      auto tmp = args.get("port-file") + ".tmp";
      std::ofstream(tmp) << server->port() << "\n";
      if (std::rename(tmp.c_str(), args.get("port-file").c_str()) != 0)
        throw std::runtime_error("cannot write --port-file " + args.get("port-file"));
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
