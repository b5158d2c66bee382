// dde-activator: one per node. Registers with the registry, runs isolate systems as child
// processes, and hosts remote workers for routers on other nodes.
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "activator.hpp"
#include "dde/cli.hpp"
#include "dde/daemon.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "dde/tls_flags.hpp"
#include "dde/trace.hpp"

namespace {

/// The command line's options (its --help).
void define_options(dde::cli& args) {
  char hostname[HOST_NAME_MAX + 1] = "node";
  ::gethostname(hostname, sizeof hostname);
  auto self_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  args.option("registry", "ws://127.0.0.1:8000/registry",
              "WebSocket URL of the registry; a comma-separated list for a registry pair on a shared store "
              "(manual: Operations, \"A registry that remembers, and a pair\"): the node registers with the one that is active, and moves on to the "
              "next when its link ends or a standby refuses it")
      .option("listen", "127.0.0.1", "address to listen on")
      .option("port", "42042", "port of /activator (remote workers) and /control (local isolate systems)")
      .option("name", hostname, "this node's name in the registry")
      .option("advertise-host", "", "address other nodes reach this one at (default: --listen)")
      .option("host-binary", (self_dir / "dde-isolate-system").string(), "the isolate-system executable")
      .option("log-dir", "/tmp", "where each isolate system's log goes (<dir>/<system>.log)")
      .option("orphan-timeout-ms", "120000", "an isolate system stops after this long without its activator")
      .option("restart-backoff-ms", "500", "first delay before restarting a crashed isolate system")
      .option("host-start-timeout-ms", "15000",
              "how long a started isolate system has to say hello before its start counts as failed")
      .option("host-threads", "2", "threads of each isolate system, at most (its --threads)")
      .option("host-thread-lag-us", "1000",
              "each isolate system's --thread-lag-us (0: all threads always run)")
      .option("host-scheduling", "batch",
              "how the kernel schedules each isolate system's threads (its --scheduling): batch or normal")
      .option("threads", "2", "threads of the activator")
      .repeated(
          "plugin-allow",
          "plugins (and custom routers) only from this directory or http(s) URL prefix, for the isolate "
          "systems and the remote workers of this node; repeatable (default: from anywhere)")
      .option(
          "cluster-secret-file", "",
          "file holding the cluster secret: required of /activator and /control links, sent to the registry "
          "and handed to the isolate systems through their environment (default: $DDE_CLUSTER_SECRET)")
      .option("trace-log", "",
              "span log (manual: Operations, \"Traces\") of this node's remote workers and, through DDE_TRACE_LOG, of the "
              "isolate systems it starts (default: $DDE_TRACE_LOG, else none)")
      .option("trace-node", "", "the node named in the span log (default: $DDE_TRACE_NODE, else the host name)")
      .option("log-level", "info", "trace, debug, info, warn, error or off");
  dde::add_tls_flags(args, true);
}

/// The node's settings from the command line; throws std::invalid_argument on a bad one.
dde::activator::activator_options read_options(const dde::cli& args) {
  dde::activator::activator_options o;
  o.registry = args.get("registry");
  o.listen = args.get("listen");
  o.port = std::uint16_t(args.get_int("port", 0, 65535));
  o.name = args.get("name");
  o.advertise_host = args.get("advertise-host");
  o.threads = int(args.get_int("threads", 1, 64));
  o.manager.host_binary = args.get("host-binary");
  o.manager.log_dir = args.get("log-dir");
  o.manager.log_level = args.get("log-level");
  o.manager.orphan_timeout = std::chrono::milliseconds(args.get_int("orphan-timeout-ms", 100, 86400000));
  o.manager.restart_backoff = std::chrono::milliseconds(args.get_int("restart-backoff-ms", 10, 600000));
  o.manager.start_timeout = std::chrono::milliseconds(args.get_int("host-start-timeout-ms", 100, 3600000));
  o.manager.host_threads = int(args.get_int("host-threads", 1, 256));
  o.manager.host_thread_lag = std::chrono::microseconds(args.get_int("host-thread-lag-us", 0, 10000000));
  o.manager.host_scheduling = args.get("host-scheduling");
  if (auto err = dde::check_scheduling(o.manager.host_scheduling))
    throw std::invalid_argument("--host-scheduling: " + *err);
  o.manager.plugin_allow = args.all("plugin-allow");
  o.cluster_secret = dde::net::load_secret(args.get("cluster-secret-file"), dde::net::cluster_secret_env);
  dde::activator::parse_registry_urls(o.registry);  // throws naming a bad one
  o.tls = dde::apply_tls_flags(args);
  if (::access(o.manager.host_binary.c_str(), X_OK) != 0)
    throw std::invalid_argument("--host-binary " + o.manager.host_binary + " is not an executable");
  std::filesystem::create_directories(o.manager.log_dir);
  // The isolate systems it spawns inherit these through the environment.
  if (!args.get("trace-log").empty()) ::setenv("DDE_TRACE_LOG", args.get("trace-log").c_str(), 1);
  if (!args.get("trace-node").empty()) ::setenv("DDE_TRACE_NODE", args.get("trace-node").c_str(), 1);
  dde::trace::open_span_log({}, {});
  return o;
}

/// Serves until SIGINT or SIGTERM; the exit status.
int run(const dde::activator::activator_options& o) {
  dde::net::set_cluster_secret(o.cluster_secret);
  // The isolate systems it spawns inherit the secret through the environment, never argv.
  if (!o.cluster_secret.empty()) ::setenv(dde::net::cluster_secret_env, o.cluster_secret.c_str(), 1);
  dde::net::warn_if_exposed(*dde::logger("activator"),
                            {"dde-activator", o.listen, o.tls.enabled(), true, !o.cluster_secret.empty()});

  dde::block_stop_signals();
  try {
    dde::activator::activator node(o);
    node.start();
    dde::notify_ready("listening on port " + std::to_string(o.port));
    int sig = dde::wait_for_stop_signal();
    dde::logger("activator")->info("signal {} received: stopping the isolate systems", sig);
    dde::notify_stopping();
    node.stop();
  } catch (const std::exception& e) {
    dde::logger("activator")->critical("{}", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dde::cli args("dde-activator", "A DDE node: System Bootstrapper + Isolate Deployer (thesis 3.2.4).");
  define_options(args);
  if (auto exit_code = dde::parse_command_line(args, argc, argv, "dde-activator")) return *exit_code;
  dde::activator::activator_options o;
  try {
    o = read_options(args);
  } catch (const std::exception& e) {
    std::cerr << "dde-activator: " << e.what() << "\n";
    return 2;
  }
  return run(o);
}
