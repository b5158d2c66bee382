// dde-isolate-system: hosts one isolate system and the pools given on the command line.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "dde/core/command_line.hpp"
#include "dde/core/daemon.hpp"
#include "dde/core/tls_flags.hpp"
#include "dde/core/trace.hpp"
#include "dde/host/isolate_system.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"

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

/// The command line's values that are not settings of the isolate system itself.
struct command_line_values {
  std::vector<std::string> pool_files, pool_texts;
  std::string ops_port, cluster_secret_file, trace_log, trace_node;
  std::string scheduling = "batch";
  std::string log_level = "info";
  dde::net::tls_options tls;
};

/// The options of its links: to the MQS and to an activator.
void define_link_options(CLI::App& app, dde::host::isolate_system_options& o) {
  app.add_option("--mqs", o.mqs_url,
                 "WebSocket URL of the message-queuing system, or several comma-separated: after a lost link "
                 "the next is tried")
      ->type_name("URL");
  app.add_option("--window", o.window, "unconfirmed at-least-once messages before senders wait")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  dde::add_duration(
      app, "--stall-timeout-ms", o.stall_timeout, 0, 3600000,
      "a pool with credit out at the MQS that gets no delivery this long while its queue holds "
      "ready messages is stalled: logged, counted, /health degraded, and the MQS link moves to a "
      "fresh connection (the next --mqs URL); 0: never")
      ->type_name("MS")
      ->envname("DDE_STALL_TIMEOUT_MS");
  app.add_option("--control", o.control_url,
                 "the node activator's control endpoint, e.g. ws://127.0.0.1:42042/control")
      ->type_name("URL");
  dde::add_duration(app, "--orphan-timeout-ms", o.orphan_timeout, 100, 86400000,
                    "with --control: stop after this long without an activator")
      ->type_name("MS");
}

/// The command line's options (its --help), filling `o` and `v`.
void define_options(CLI::App& app, dde::host::isolate_system_options& o, command_line_values& v) {
  app.add_option("--name", o.name, "isolate system name, e.g. sampleSystem")->type_name("NAME")->required();
  define_link_options(app, o);
  app.add_option("--pool", v.pool_files, "JSON file with a pool spec (the thesis's addIsolate body)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app.add_option("--pool-json", v.pool_texts, "a pool spec given inline as JSON")
      ->type_name("JSON")
      ->allow_extra_args(false);
  app.add_option("--instance", o.instance, "instance UUID (default: a new one)")->type_name("UUID");
  app.add_option("--threads", o.threads, "threads that run the pools, at most: the first alone until it lags")
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  dde::add_duration(app, "--thread-lag-us", o.thread_lag, 0, 10000000,
                    "the other --threads join the first while a task posted to it waits longer than this, "
                    "or it is 90% busy, and leave when it no longer is; 0: all of them run all the time")
      ->type_name("US");
  app.add_option("--plugin-cache", o.plugin_cache,
                 "keep copies of plugin versions that worked here (with --control), and "
                 "plugins downloaded from http(s) URIs (default for those: a temporary directory)")
      ->type_name("DIR");
  app.add_option("--ca-file", o.ca_file,
                 "PEM file of the CA(s) that https plugin URIs are verified against "
                 "(default: the system's store)")
      ->type_name("FILE")
      ->envname("DDE_CA_FILE");
  app.add_option("--ops-port", v.ops_port,
                 "serve GET /metrics and GET /health on 127.0.0.1 at this port (0: a free one, which the "
                 "activator is told; the activator starts its systems with 0); empty: none")
      ->type_name("PORT")
      ->check(CLI::Range(0, 65535));
  app.add_option(
         "--plugin-allow", o.plugin_allow,
         "load plugins (and custom routers) only from this directory or http(s) URL prefix (default: from "
         "anywhere)")
      ->type_name("PREFIX")
      ->allow_extra_args(false);
  app.add_option(
         "--cluster-secret-file", v.cluster_secret_file,
         "file holding the cluster secret sent on the links to the MQS, the activator and remote workers "
         "(default: $DDE_CLUSTER_SECRET, else none)")
      ->type_name("FILE");
  app.add_option(
         "--trace-log", v.trace_log,
         "append a JSON line per span (a message handled, manual: Operations, \"Traces\") to this file and "
         "start a trace for messages sent outside one (default: $DDE_TRACE_LOG, else no span log; "
         "traceparent headers that arrive are carried on either way)")
      ->type_name("FILE");
  app.add_option("--trace-node", v.trace_node,
                 "the node named in the span log (default: $DDE_TRACE_NODE, else the host name)")
      ->type_name("NAME");
  app.add_option("--scheduling", v.scheduling, dde::scheduling_help)
      ->type_name("POLICY")
      ->check(dde::scheduling_check);
  dde::add_log_level(app, v.log_level);
  dde::add_tls_flags(app, v.tls, false);
}

/// Completes the isolate system's settings once the command line is read; throws
/// std::invalid_argument on a bad one.
void finish_options(dde::host::isolate_system_options& options, const command_line_values& v) {
  dde::net::set_cluster_secret(dde::net::load_secret(v.cluster_secret_file, dde::net::cluster_secret_env));
  dde::trace::open_span_log(v.trace_log, v.trace_node);
  if (!v.ops_port.empty()) options.ops_port = std::stoi(v.ops_port);
  // wss:// links (MQS, activator control, remote isolate deployers): the activator hands its
  // settings down through DDE_TLS_* when it starts this process.
  dde::apply_tls_flags(v.tls, false);
  options.request_stop = [](const std::string& why) {
    dde::logger("host")->info("stopping: {}", why);
    ::kill(::getpid(), SIGTERM);
  };
}

/// The pools of --pool files and --pool-json texts; throws std::invalid_argument on a bad one.
std::vector<dde::pool_spec> read_pools(const command_line_values& v, const std::string& system) {
  std::vector<nlohmann::json> bodies;
  for (auto& file : v.pool_files) {
    std::string error;
    auto j = read_json_file(file, error);
    if (!j) throw std::invalid_argument(error);
    bodies.push_back(*j);
  }
  for (auto& text : v.pool_texts) {
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
  dde::command_line line("dde-isolate-system",
                         "Hosts one DDE isolate system: connects to an MQS and runs worker pools.");
  dde::host::isolate_system_options options;
  command_line_values values;
  define_options(line.app(), options, values);
  line.accept_config_file("{\"name\": \"shop\", \"pool\": [\"orders.json\"]}");
  if (auto exit_code = line.parse_or_exit(argc, argv)) return *exit_code;
  dde::set_log_level(values.log_level);
  // Before any thread starts: they inherit it (the workers' threads too).
  if (auto err = dde::apply_scheduling(values.scheduling))
    dde::logger("host")->warn("{}; the threads stay as they were", *err);
  std::vector<dde::pool_spec> pools;
  try {
    finish_options(options, values);
    pools = read_pools(values, options.name);
  } catch (const std::exception& e) {
    std::cerr << "dde-isolate-system: " << e.what() << "\n";
    return 2;
  }
  return run(options, pools);
}
