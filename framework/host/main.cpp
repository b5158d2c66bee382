// dde-isolate-system: hosts one isolate system and the pools given on the command line.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "dde/cli.hpp"
#include "dde/daemon.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "dde/tls_flags.hpp"
#include "dde/trace.hpp"
#include "host/isolate_system.hpp"

namespace {

std::optional<nlohmann::json> read_json_file(const std::string& path, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) {
    error = path + " is not valid JSON";
    return std::nullopt;
  }
  return j;
}

/// The command line's options (its --help).
void define_options(dde::cli& args) {
  args.option("name", "", "isolate system name (required), e.g. sampleSystem")
      .option("mqs", "ws://127.0.0.1:42043/mqs", "WebSocket URL of the message-queuing system")
      .repeated("pool", "JSON file with a pool spec (the thesis's addIsolate body)")
      .repeated("pool-json", "a pool spec given inline as JSON")
      .option("instance", "", "instance UUID (default: a new one)")
      .option("threads", "2", "threads that run the pools, at most: the first alone until it lags")
      .option("thread-lag-us", "1000",
              "the other --threads join the first while a task posted to it waits longer than this, "
              "or it is 90% busy, and leave when it no longer is; 0: all of them run all the time")
      .option("window", "4096", "unconfirmed at-least-once messages before senders wait")
      .option("control", "", "the node activator's control endpoint, e.g. ws://127.0.0.1:42042/control")
      .option("orphan-timeout-ms", "120000", "with --control: stop after this long without an activator")
      .option("plugin-cache", "",
              "keep copies of plugin versions that worked here (with --control), and "
              "plugins downloaded from http(s) URIs (default for those: a temporary directory)")
      .option("ca-file", "",
              "PEM file of the CA(s) that https plugin URIs are verified against (default: "
              "$DDE_CA_FILE, else the system's store)")
      .option("ops-port", "",
              "serve GET /metrics and GET /health on 127.0.0.1 at this port (0: a free one, which the "
              "activator is told; the activator starts its systems with 0); empty: none")
      .repeated(
          "plugin-allow",
          "load plugins (and custom routers) only from this directory or http(s) URL prefix; repeatable "
          "(default: from anywhere)")
      .option(
          "cluster-secret-file", "",
          "file holding the cluster secret sent on the links to the MQS, the activator and remote workers "
          "(default: $DDE_CLUSTER_SECRET, else none)")
      .option("trace-log", "",
              "append a JSON line per span (a message handled, manual: Operations, \"Traces\") to this file and start a "
              "trace for messages sent outside one (default: $DDE_TRACE_LOG, else no span log; traceparent "
              "headers that arrive are carried on either way)")
      .option("trace-node", "", "the node named in the span log (default: $DDE_TRACE_NODE, else the host name)")
      .option("scheduling", "batch", dde::scheduling_help)
      .option("log-level", "info", "trace, debug, info, warn, error or off");
  dde::add_tls_flags(args, false);
}

/// The isolate system's settings from the command line; throws std::invalid_argument on a bad one.
dde::host::isolate_system_options read_options(const dde::cli& args) {
  dde::host::isolate_system_options options;
  options.name = args.get("name");
  if (options.name.empty()) throw std::invalid_argument("--name is required");
  options.mqs_url = args.get("mqs");
  options.instance = args.get("instance");
  options.threads = int(args.get_int("threads", 1, 256));
  options.thread_lag = std::chrono::microseconds(args.get_int("thread-lag-us", 0, 10000000));
  options.window = std::size_t(args.get_int("window", 1, 1000000));
  options.control_url = args.get("control");
  options.plugin_cache = args.get("plugin-cache");
  options.ca_file = args.get("ca-file");
  options.plugin_allow = args.all("plugin-allow");
  dde::net::set_cluster_secret(dde::net::load_secret(args.get("cluster-secret-file"), dde::net::cluster_secret_env));
  if (const char* env = std::getenv("DDE_CA_FILE"); options.ca_file.empty() && env) options.ca_file = env;
  dde::trace::open_span_log(args.get("trace-log"), args.get("trace-node"));
  if (!args.get("ops-port").empty()) options.ops_port = int(args.get_int("ops-port", 0, 65535));
  options.orphan_timeout = std::chrono::milliseconds(args.get_int("orphan-timeout-ms", 100, 86400000));
  // wss:// links (MQS, activator control, remote isolate deployers): the activator hands its
  // settings down through DDE_TLS_* when it starts this process.
  dde::apply_tls_flags(args);
  options.request_stop = [](const std::string& why) {
    dde::logger("host")->info("stopping: {}", why);
    ::kill(::getpid(), SIGTERM);
  };
  return options;
}

/// The pools of --pool files and --pool-json texts; throws std::invalid_argument on a bad one.
std::vector<dde::pool_spec> read_pools(const dde::cli& args, const std::string& system) {
  std::vector<nlohmann::json> bodies;
  for (auto& file : args.all("pool")) {
    std::string error;
    auto j = read_json_file(file, error);
    if (!j) throw std::invalid_argument(error);
    bodies.push_back(*j);
  }
  for (auto& text : args.all("pool-json")) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) throw std::invalid_argument("--pool-json is not valid JSON: " + text);
    bodies.push_back(j);
  }
  std::vector<dde::pool_spec> pools;
  for (auto& body : bodies) {
    auto spec = dde::parse_pool_spec(body, system);
    if (!spec) throw std::invalid_argument("bad pool spec: " + spec.error());
    pools.push_back(spec.value());
  }
  return pools;
}

/// Runs the isolate system with its first pools until SIGINT or SIGTERM; the exit status.
int run(const dde::host::isolate_system_options& options, const std::vector<dde::pool_spec>& pools) {
  auto log = dde::logger("host");
  // Block the stop signals in every thread; this one waits for them.
  dde::block_stop_signals();
  try {
    dde::host::isolate_system system(options);
    system.start();
    for (auto& spec : pools) {
      auto error = system.add_pool(spec);
      if (!error.empty()) {
        log->critical("cannot deploy {}: {}", spec.addr().str(), error);
        system.stop();
        return 1;
      }
    }
    int sig = dde::wait_for_stop_signal();
    log->info("signal {} received: stopping", sig);
    system.stop();
  } catch (const std::exception& e) {
    log->critical("{}", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dde::cli args("dde-isolate-system", "Hosts one DDE isolate system: connects to an MQS and runs worker pools.");
  define_options(args);
  if (auto exit_code = dde::parse_command_line(args, argc, argv, "dde-isolate-system")) return *exit_code;
  if (auto err = dde::check_scheduling(args.get("scheduling"))) {
    std::cerr << "dde-isolate-system: --scheduling: " << *err << "\n";
    return 2;
  }
  // Before any thread starts: they inherit it (the workers' threads too).
  if (auto err = dde::apply_scheduling(args.get("scheduling")))
    dde::logger("host")->warn("{}; the threads stay as they were", *err);
  dde::host::isolate_system_options options;
  std::vector<dde::pool_spec> pools;
  try {
    options = read_options(args);
    pools = read_pools(args, options.name);
  } catch (const std::exception& e) {
    std::cerr << "dde-isolate-system: " << e.what() << "\n";
    return 2;
  }
  return run(options, pools);
}
