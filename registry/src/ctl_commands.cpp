#include "dde/registry/ctl_commands.hpp"

#include <cctype>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "ctl_requests.hpp"
#include "dde/core/command_line.hpp"
#include "dde/names.hpp"
#include "dde/net/auth.hpp"
#include "dde/net/target.hpp"

namespace dde::ctl {
namespace {

using json = nlohmann::json;
using namespace detail;

struct command {
  const char* name;
  const char* synopsis;  ///< after "ddectl NAME"
  const char* summary;
  std::size_t min_args, max_args;
  void (*options)(CLI::App&, option_values&);
  std::function<std::variant<rest_call, ask_call>(const std::vector<std::string>&, const option_values&,
                                                  std::istream&)>
      build;
};

void common_options(CLI::App& app, common_values& v) {
  app.add_option(
         "--registry", v.registry,
         "the registry's base URL; a comma-separated list for a registry pair: the active one is used")
      ->type_name("URL");
  app.add_option("-o,--output", v.output, "table (for people) or json (the registry's answer, for scripts)")
      ->type_name("FORMAT")
      ->check([](const std::string& f) {
        return f == "table" || f == "json" ? std::string() : "must be table or json, got \"" + f + "\"";
      });
  app.add_option("--timeout-ms", v.timeout_ms, "give up on an answer after this long (apply: 300000)")
      ->type_name("MS")
      ->check(CLI::Range(1, 3600 * 1000));
  app.add_option("--token-file", v.token_file,
                 "file holding the registry's bearer token (default: $DDE_TOKEN)")
      ->type_name("FILE");
  app.add_option("--cluster-secret-file", v.cluster_secret_file,
                 "ask: file holding the cluster secret (default: $DDE_CLUSTER_SECRET)")
      ->type_name("FILE");
  app.add_option("--tls-ca", v.tls_ca,
                 "https/wss: PEM CA the registry (and MQS) are verified against (default: system store)")
      ->type_name("FILE");
  app.add_option("--ca", v.ca, "the same as --tls-ca")->type_name("FILE");
  app.add_option("--tls-cert", v.tls_cert,
                 "https/wss: PEM client certificate, for a registry with --tls-verify-client")
      ->type_name("FILE");
  app.add_option("--tls-key", v.tls_key, "PEM private key of --tls-cert")->type_name("FILE");
}

void no_options(CLI::App&, option_values&) {}

void deploy_options(CLI::App& app, option_values& all) {
  auto& v = all.deploy;
  app.add_option("--bootstrapper", v.bootstrapper, "bootstrapperId of the node (bootstrapperId)")
      ->type_name("ID");
  app.add_option("--mqs", v.mqs,
                 "the MQS the isolate system uses, ws://host:port/mqs (messageQueuingSystemServer)")
      ->type_name("URL");
  app.add_option("--system", v.system, "isolate system name (isolateSystemName)")->type_name("NAME");
  app.add_option("--isolate", v.isolate, "pool name (isolateName)")->type_name("NAME");
  app.add_option("--uri", v.uri, "the worker plugin .so (uri)")->type_name("URI");
  app.add_option("--workers", v.workers,
                 "comma-separated workersPaths: localhost or ws://host:port/activator")
      ->type_name("LIST");
  app.add_option("--router", v.router,
                 "routerType: roundRobin, random, broadcast, smallestMailbox, consistentHash, scatterGather, "
                 "tailChopping or a custom router .so")
      ->type_name("ROUTER");
  app.add_option("--hot-deployment", v.hot_deployment, "hotDeployment: true or false")->type_name("BOOL");
  app.add_option("--args", v.args, "args given to the workers, as JSON")->type_name("JSON");
  app.add_option("--delivery-mode", v.delivery_mode,
                 "deliveryMode: at-least-once or at-most-once (the node's default if unset)")
      ->type_name("MODE");
  app.add_option_function<std::int64_t>(
         "--credits", [&v](std::int64_t n) { v.credits = n; },
         "credits: messages a worker may hold (the node's default if unset)")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--sha256", v.sha256,
                 "the plugin's SHA-256 (hex): a plugin file with another hash is refused")
      ->type_name("HEX");
}

void migrate_options(CLI::App& app, option_values& v) {
  app.add_option("--workers", v.new_workers, "comma-separated new workersPaths")->type_name("LIST");
  app.add_option("--to", v.to, "bootstrapperId of the target node")->type_name("ID");
}

void apply_options(CLI::App& app, option_values& v) {
  app.add_option("-f,--filename", v.filename, "the JSON file of deploy bodies ('-' = standard input)")
      ->type_name("FILE");
  app.add_flag("--dry-run", v.dry_run, "only say what would change");
}

void dlq_options(CLI::App& app, option_values& v) {
  app.add_option_function<std::int64_t>(
         "--limit", [&v](std::int64_t n) { v.limit = n; },
         "list: show at most this many (default 100, at most 1000); replay: move at most this many")
      ->type_name("N")
      ->check(CLI::Range(1, 10000));
  app.add_flag("--all", v.all, "replay or purge: every message (instead of IDs)");
}

void ask_options(CLI::App& app, option_values& v) {
  app.add_option("--mqs", v.ask_mqs,
                 "the dde-mqs to send through (default: the pool's, as the registry knows it)")
      ->type_name("URL");
  app.add_option("--mode", v.mode,
                 "at-least-once or at-most-once (default: the pool's; with --no-registry: at-least-once)")
      ->type_name("MODE");
  app.add_flag("--no-registry", v.no_registry,
               "send without asking the registry (the MQS declares the queue if it is new; --mqs default "
               "ws://127.0.0.1:42043/mqs)");
}

rest_call get(std::string path) { return {"GET", std::move(path), ""}; }

/// The body every pool command sends: node, system and pool (`args` ID SYSTEM ISOLATE).
json pool_body(const std::vector<std::string>& a) {
  return {{"bootstrapperId", a[0]}, {"isolateSystemName", a[1]}, {"isolateName", a[2]}};
}

std::variant<rest_call, ask_call> deploy_from(const std::vector<std::string>& a, const option_values& v,
                                              std::istream& in) {
  if (!a.empty() && v.own_options_given > 0) throw usage_error("give a FILE.json or options, not both");
  return a.empty() ? deploy_from_flags(v.deploy) : deploy_from_file(a[0], in);
}

std::variant<rest_call, ask_call> shutdown_from(const std::vector<std::string>& a, const option_values&,
                                                std::istream&) {
  json body = {{"bootstrapperId", a[0]}, {"isolateSystemName", a[1]}};
  if (a.size() == 3) body["isolateName"] = a[2];
  return rest_call{"POST", "/registry/system/shutdown", body.dump(2)};
}

std::variant<rest_call, ask_call> kill_from(const std::vector<std::string>& a, const option_values&,
                                            std::istream&) {
  json body = pool_body(a);
  if (a.size() == 4) body["workerId"] = a[3];
  return rest_call{"POST", "/registry/system/kill", body.dump(2)};
}

std::variant<rest_call, ask_call> migrate_from(const std::vector<std::string>& a, const option_values& v,
                                               std::istream&) {
  json body = pool_body(a);
  if (v.new_workers.empty() && v.to.empty()) throw usage_error("migrate needs --workers or --to");
  if (!v.new_workers.empty()) body["workersPaths"] = split_list(v.new_workers);
  if (!v.to.empty()) body["toBootstrapperId"] = v.to;
  return rest_call{"POST", "/registry/migrate", body.dump(2)};
}

const std::vector<command>& commands() {
  using a = const std::vector<std::string>&;
  using o = const option_values&;
  static const std::vector<command> all = {
      {"list", "", "Lists the connected nodes: GET /registry/system/list.", 0, 0, no_options,
       [](a, o, auto&) { return get("/registry/system/list"); }},
      {"show", "ID", "Shows the isolate systems and pools of node ID: GET /registry/system/ID.", 1, 1,
       no_options, [](a args, o, auto&) { return get("/registry/system/" + net::percent_encode(args[0])); }},
      {"deploy", "(FILE.json | --bootstrapper ID --mqs URL --system S --isolate I --uri U)",
       "Deploys a pool: POST /registry/deploy with a thesis deploy body from FILE.json ('-' = standard\n"
       "input) or built from the options.",
       0, 1, deploy_options, deploy_from},
      {"shutdown", "ID SYSTEM [ISOLATE]",
       "Stops pool ISOLATE of isolate system SYSTEM on node ID, or the whole isolate system without\n"
       "ISOLATE: POST /registry/system/shutdown.",
       2, 3, no_options, shutdown_from},
      {"restart", "ID SYSTEM ISOLATE",
       "Restarts every worker of pool SYSTEM/ISOLATE on node ID once its in-flight messages are done\n"
       "(thesis RESTART): POST /registry/system/restart.",
       3, 3, no_options,
       [](a args, o, auto&) {
         return rest_call{"POST", "/registry/system/restart", pool_body(args).dump(2)};
       }},
      {"kill", "ID SYSTEM ISOLATE [WORKER]",
       "Kills worker WORKER of pool SYSTEM/ISOLATE on node ID, or every worker without WORKER (thesis\n"
       "KILL): each finishes the messages it holds and stays down until a restart: POST "
       "/registry/system/kill.",
       3, 4, no_options, kill_from},
      {"migrate", "ID SYSTEM ISOLATE (--workers LIST | --to ID2)",
       "Moves pool SYSTEM/ISOLATE of node ID to new workersPaths on that node (--workers), or to node ID2\n"
       "(--to; with --workers too, it runs there with those paths): POST /registry/migrate.",
       3, 3, migrate_options, migrate_from},
      {"status", "",
       "Every pool of the cluster in one table: node, system, state, workers, messages in and out per\n"
       "second, in flight, queue and dead-letter depth: GET /registry/status.",
       0, 0, no_options, [](a, o, auto&) { return get("/registry/status"); }},
      {"apply", "-f FILE",
       "Makes the cluster run the pools of FILE (a JSON array of deploy bodies; '-' = standard input):\n"
       "deploys what is missing, changes what differs (a new rate at once; other fields by redeploying\n"
       "the pool; another node by moving it), leaves what matches. Fields a body leaves out keep their\n"
       "running values; applying twice changes nothing: POST /registry/apply.",
       0, 1, apply_options, apply_from},
      {"health", "", "Checks the registry: GET /registry/health.", 0, 0, no_options,
       [](a, o, auto&) { return get("/registry/health"); }},
      {"dlq", "(list | show | replay | purge) SYSTEM/POOL [ID...]",
       "The dead letters of pool SYSTEM/POOL (queue dde.dead.SYSTEM.POOL): list them (why each was\n"
       "dead-lettered, attempts, the plugin md5 that failed it, age, size), show one ID, replay IDs (or\n"
       "--all) to the pool, e.g. once a fixed version is deployed, or purge IDs (or --all): GET\n"
       "/registry/dlq/SYSTEM/POOL[/ID], POST /registry/dlq/SYSTEM/POOL/replay, POST .../purge.",
       2, 10000, dlq_options, dlq_from},
      {"ask", "ADDRESS [JSON]",
       "Sends JSON (default {}; '-' = standard input) to pool ADDRESS (system/isolate) as an ask, through\n"
       "its MQS (not the registry), and prints the reply (exit 1 when none comes in time). The registry\n"
       "is asked first where the pool runs: a pool no node runs is an error, and nothing is sent.",
       1, 2, ask_options, ask_from},
  };
  return all;
}

std::string usage_line(const command& cmd) {
  return std::string("ddectl ") + cmd.name + (*cmd.synopsis ? std::string(" ") + cmd.synopsis : "");
}

/// `ddectl COMMAND --help`: the command's synopsis, what it does, its options and every command's.
std::string command_help(const command& cmd, const CLI::App& sub, const CLI::App& top) {
  std::string out = "usage: " + usage_line(cmd) + " [options]\n" + cmd.summary + "\n\noptions:\n";
  for (const CLI::Option* opt : sub.get_options())
    if (!opt->get_lnames().empty()) out += help_line(*opt);
  for (const CLI::Option* opt : top.get_options())
    if (!opt->get_lnames().empty() && opt->get_lnames().front() != "help") out += help_line(*opt);
  return out;
}

/// The command line as CLI11 reads it: every command a subcommand, whose options and positional
/// arguments fill `v` and `positionals`; the common options also after the command.
struct parser {
  dde::command_line line{"ddectl", ""};
  option_values v;
  std::vector<std::string> positionals;
  std::string unknown_command;

  parser() {
    auto& app = line.app();
    app.fallthrough();
    // One command per call: after it, a word that names another command is an argument.
    app.require_subcommand(0, 1);
    common_options(app, v.common);
    app.add_option("command", unknown_command)->configurable(false);
    for (auto& cmd : commands()) {
      auto* sub = app.add_subcommand(cmd.name, cmd.summary);
      cmd.options(*sub, v);
      sub->add_option("arguments", positionals);
    }
  }

  const command* chosen() const {
    for (auto& cmd : commands())
      if (line.app().get_subcommand(cmd.name)->parsed()) return &cmd;
    return nullptr;
  }
};

/// The invocation's settings shared by every command, once the command line is read.
void settle_common(invocation& out, const common_values& v) {
  out.output = v.output == "json" ? output_format::json : output_format::table;
  out.registry = v.registry;
  while (!out.registry.empty() && out.registry.back() == '/') out.registry.pop_back();
  if (out.registry.rfind("http://", 0) != 0 && out.registry.rfind("https://", 0) != 0)
    throw usage_error("--registry must be an http:// or https:// URL, got \"" + v.registry + "\"");
  out.tls.ca_file = v.tls_ca.empty() ? v.ca : v.tls_ca;
  out.tls.cert_file = v.tls_cert;
  out.tls.key_file = v.tls_key;
  if (out.tls.cert_file.empty() != out.tls.key_file.empty())
    throw usage_error("--tls-cert and --tls-key go together");
  out.timeout = std::chrono::milliseconds(v.timeout_ms);
  try {
    out.token = net::load_secret(v.token_file, "DDE_TOKEN");
    out.cluster_secret = net::load_secret(v.cluster_secret_file, net::cluster_secret_env);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
}

}  // namespace

std::string general_help() {
  std::string out =
      "usage: ddectl [--registry URL] [--timeout-ms MS] [-o table|json] COMMAND [ARGS]\n"
      "A command-line client of the DDE registry's REST API. Prints tables and sentences, or with\n"
      "-o json the registry's answer as indented JSON.\n\ncommands:\n";
  for (auto& cmd : commands()) {
    std::string summary = cmd.summary;
    for (auto nl = summary.find('\n'); nl != std::string::npos; nl = summary.find('\n', nl + 1))
      summary.replace(nl, 1, "\n      ");
    out += std::string("  ") + cmd.name + (*cmd.synopsis ? std::string(" ") + cmd.synopsis : "") +
           "\n      " + summary + "\n";
  }
  out +=
      "\noptions (before or after the command):\n"
      "  --registry URL              the registry's base URL (default: http://127.0.0.1:8000)\n"
      "  --timeout-ms MS             give up on an answer after this long (default: 30000; apply: 300000)\n"
      "  -o, --output FORMAT         table (default) or json: the registry's answer as it came\n"
      "  --token-file FILE           the registry's bearer token (default: $DDE_TOKEN)\n"
      "  --cluster-secret-file FILE  ask: the cluster secret for the MQS (default: $DDE_CLUSTER_SECRET)\n"
      "  --tls-ca FILE (or --ca)     https/wss: the CA the registry is verified against\n"
      "  --tls-cert FILE, --tls-key FILE  a client certificate, for a registry that asks for one\n"
      "  --help                      this text; 'ddectl COMMAND --help' describes a command\n"
      "  --version                   print the version\n"
      "\nexit status: 0 ok, 1 the registry answered an error (printed to stderr), 2 usage error,\n"
      "3 the registry cannot be reached (for ask: the MQS).\n";
  return out;
}

std::string registry_error_text(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  return body;
}

invocation parse_invocation(const std::vector<std::string>& args, std::istream& stdin_for_dash) {
  invocation out;
  parser p;
  std::vector<const char*> argv{"ddectl"};
  for (auto& a : args) argv.push_back(a.c_str());
  auto parsed = p.line.parse(int(argv.size()), argv.data());
  const command* cmd = p.chosen();
  try {
    if (parsed.what == dde::command_line::outcome::help) {
      out.help =
          cmd ? command_help(*cmd, *p.line.app().get_subcommand(cmd->name), p.line.app()) : general_help();
      return out;
    }
    if (parsed.what == dde::command_line::outcome::version) {
      out.help = parsed.text + "\n";
      return out;
    }
    if (!p.unknown_command.empty())
      throw usage_error("unknown command \"" + p.unknown_command + "\" (see ddectl --help)");
    if (parsed.what == dde::command_line::outcome::error) throw usage_error(parsed.text);
    if (!cmd)
      throw usage_error(
          "missing command (list, show, status, deploy, apply, shutdown, restart, kill, migrate, health, "
          "dlq, ask)");
    if (p.positionals.size() < cmd->min_args || p.positionals.size() > cmd->max_args)
      throw usage_error("usage: " + usage_line(*cmd) + " (see ddectl " + cmd->name + " --help)");
    auto& sub = *p.line.app().get_subcommand(cmd->name);
    for (const CLI::Option* opt : sub.get_options())
      if (!opt->get_lnames().empty()) p.v.own_options_given += opt->count();
    out.command = cmd->name;
    out.args = p.positionals;
    settle_common(out, p.v.common);
    // An apply runs its pools' deploys one after another, each up to the node's request timeout.
    if (out.command == "apply" && p.line.app().get_option("--timeout-ms")->count() == 0)
      out.timeout = std::chrono::milliseconds(300000);
    auto built = cmd->build(p.positionals, p.v, stdin_for_dash);
    if (auto* rest = std::get_if<rest_call>(&built))
      out.call = std::move(*rest);
    else
      out.ask = std::get<ask_call>(std::move(built));
  } catch (const usage_error& e) {
    out.error = e.what();
    out.call.reset();
    out.ask.reset();
  }
  return out;
}

}  // namespace dde::ctl
