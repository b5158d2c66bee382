// dde-activator: one per node. Registers with the registry, runs isolate systems as child
// processes, and hosts remote workers for routers on other nodes.
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "dde/activator/activator.hpp"
#include "dde/core/command_line.hpp"
#include "dde/core/daemon.hpp"
#include "dde/core/tls_flags.hpp"
#include "dde/core/trace.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"

namespace {

/// The command line's values that the activator's options take after a check or a lookup.
struct command_line_values {
  std::string cluster_secret_file, trace_log, trace_node;
};

void define_links(CLI::App& app, dde::activator::activator_options& o) {
  app.add_option(
         "--registry", o.registry,
         "WebSocket URL of the registry; a comma-separated list for a registry pair on a shared store "
         "(manual: Operations, \"A registry that remembers, and a pair\"): the node registers with the one "
         "that is active, and moves on to the next when its link ends or a standby refuses it")
      ->type_name("URL");
  app.add_option("--listen", o.listen, "address to listen on")->type_name("HOST");
  app.add_option("--port", o.port, "port of /activator (remote workers) and /control (local isolate systems)")
      ->type_name("PORT")
      ->check(CLI::Range(0, 65535));
  app.add_option("--name", o.name, "this node's name in the registry")->type_name("NAME");
  app.add_option("--advertise-host", o.advertise_host,
                 "address other nodes reach this one at (default: --listen)")
      ->type_name("HOST");
  app.add_option("--threads", o.threads, "threads of the activator")
      ->type_name("N")
      ->check(CLI::Range(1, 64));
}

void define_isolate_systems(CLI::App& app, dde::activator::manager_options& m) {
  app.add_option("--host-binary", m.host_binary, "the isolate-system executable")->type_name("FILE");
  app.add_option("--log-dir", m.log_dir, "where each isolate system's log goes (<dir>/<system>.log)")
      ->type_name("DIR");
  dde::add_duration(app, "--orphan-timeout-ms", m.orphan_timeout, 100, 86400000,
                    "an isolate system stops after this long without its activator")
      ->type_name("MS");
  dde::add_duration(app, "--restart-backoff-ms", m.restart_backoff, 10, 600000,
                    "first delay before restarting a crashed isolate system")
      ->type_name("MS");
  dde::add_duration(app, "--host-start-timeout-ms", m.start_timeout, 100, 3600000,
                    "how long a started isolate system has to say hello before its start counts as failed")
      ->type_name("MS");
  app.add_option("--host-threads", m.host_threads, "threads of each isolate system, at most (its --threads)")
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  dde::add_duration(app, "--host-thread-lag-us", m.host_thread_lag, 0, 10000000,
                    "each isolate system's --thread-lag-us (0: all threads always run)")
      ->type_name("US");
  app.add_option("--host-scheduling", m.host_scheduling,
                 "how the kernel schedules each isolate system's threads (its --scheduling): batch or normal")
      ->type_name("POLICY")
      ->check(dde::scheduling_check);
  app.add_option(
         "--plugin-allow", m.plugin_allow,
         "plugins (and custom routers) only from this directory or http(s) URL prefix, for the isolate "
         "systems and the remote workers of this node (default: from anywhere)")
      ->type_name("PREFIX")
      ->allow_extra_args(false);
}

/// The command line's options (its --help), filling `o` and `v`.
void define_options(CLI::App& app, dde::activator::activator_options& o, command_line_values& v) {
  char hostname[HOST_NAME_MAX + 1] = "node";
  ::gethostname(hostname, sizeof hostname);
  o.name = hostname;
  o.manager.host_binary =
      (std::filesystem::canonical("/proc/self/exe").parent_path() / "dde-isolate-system").string();
  o.manager.log_dir = "/tmp";
  define_links(app, o);
  define_isolate_systems(app, o.manager);
  app.add_option(
         "--cluster-secret-file", v.cluster_secret_file,
         "file holding the cluster secret: required of /activator and /control links, sent to the registry "
         "and handed to the isolate systems through their environment (default: $DDE_CLUSTER_SECRET)")
      ->type_name("FILE");
  app.add_option("--trace-log", v.trace_log,
                 "span log (manual: Operations, \"Traces\") of this node's remote workers and, through "
                 "DDE_TRACE_LOG, "
                 "of the isolate systems it starts (default: $DDE_TRACE_LOG, else none)")
      ->type_name("FILE");
  app.add_option("--trace-node", v.trace_node,
                 "the node named in the span log (default: $DDE_TRACE_NODE, else the host name)")
      ->type_name("NAME");
  dde::add_log_level(app, o.manager.log_level);
  dde::add_tls_flags(app, o.tls, true);
}

/// Completes the node's settings once the command line is read; throws std::invalid_argument on a
/// bad one.
void finish_options(dde::activator::activator_options& o, const command_line_values& v) {
  o.cluster_secret = dde::net::load_secret(v.cluster_secret_file, dde::net::cluster_secret_env);
  dde::activator::parse_registry_urls(o.registry);  // throws naming a bad one
  dde::apply_tls_flags(o.tls, true);
  if (::access(o.manager.host_binary.c_str(), X_OK) != 0)
    throw std::invalid_argument("--host-binary " + o.manager.host_binary + " is not an executable");
  std::filesystem::create_directories(o.manager.log_dir);
  // The isolate systems it spawns inherit these through the environment.
  if (!v.trace_log.empty()) ::setenv("DDE_TRACE_LOG", v.trace_log.c_str(), 1);
  if (!v.trace_node.empty()) ::setenv("DDE_TRACE_NODE", v.trace_node.c_str(), 1);
  dde::trace::open_span_log({}, {});
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
  dde::command_line line("dde-activator",
                         "A DDE node: System Bootstrapper + Isolate Deployer (thesis 3.2.4).");
  dde::activator::activator_options o;
  command_line_values values;
  define_options(line.app(), o, values);
  line.accept_config_file("{\"registry\": \"ws://10.0.0.1:8000/registry\", \"name\": \"node-a\"}");
  if (auto exit_code = line.parse_or_exit(argc, argv)) return *exit_code;
  dde::set_log_level(o.manager.log_level);
  try {
    finish_options(o, values);
  } catch (const std::exception& e) {
    std::cerr << "dde-activator: " << e.what() << "\n";
    return 2;
  }
  return run(o);
}
