#include "ctl_commands.hpp"
#include "ctl_requests.hpp"

#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "dde/cli.hpp"
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
  std::function<void(cli&)> options;
  std::function<std::variant<rest_call, ask_call>(const std::vector<std::string>&, const cli&, std::istream&)>
      build;
};

void common_options(cli& c) {
  c.option("registry", "http://127.0.0.1:8000",
           "the registry's base URL; a comma-separated list for a registry pair: the active one is used")
      .option("output", "table", "-o: table (for people) or json (the registry's answer, for scripts)", "FORMAT")
      .option("timeout-ms", "30000", "give up on an answer after this long")
      .option("token-file", "", "file holding the registry's bearer token (default: $DDE_TOKEN)")
      .option("cluster-secret-file", "",
              "ask: file holding the cluster secret (default: $DDE_CLUSTER_SECRET)")
      .option("tls-ca", "",
              "https/wss: PEM CA the registry (and MQS) are verified against (default: system store)")
      .option("ca", "", "the same as --tls-ca")
      .option("tls-cert", "", "https/wss: PEM client certificate, for a registry with --tls-verify-client")
      .option("tls-key", "", "PEM private key of --tls-cert");
}



const std::vector<command>& commands() {
  static const std::vector<command> all = {
      {"list", "", "Lists the connected nodes: GET /registry/system/list.", 0, 0, [](cli&) {},
       [](auto&, auto&, auto&) {
         return rest_call{"GET", "/registry/system/list", ""};
       }},
      {"show", "ID", "Shows the isolate systems and pools of node ID: GET /registry/system/ID.", 1, 1,
       [](cli&) {},
       [](auto& a, auto&, auto&) {
         return rest_call{"GET", "/registry/system/" + net::percent_encode(a[0]), ""};
       }},
      {"deploy", "(FILE.json | --bootstrapper ID --mqs URL --system S --isolate I --uri U)",
       "Deploys a pool: POST /registry/deploy with a thesis deploy body from FILE.json ('-' = standard\n"
       "input) or built from the options.",
       0, 1,
       [](cli& c) {
         c.option("bootstrapper", "", "bootstrapperId of the node (bootstrapperId)")
             .option("mqs", "",
                     "the MQS the isolate system uses, ws://host:port/mqs (messageQueuingSystemServer)")
             .option("system", "", "isolate system name (isolateSystemName)")
             .option("isolate", "", "pool name (isolateName)")
             .option("uri", "", "the worker plugin .so (uri)")
             .option("workers", "localhost",
                     "comma-separated workersPaths: localhost or ws://host:port/activator")
             .option(
                 "router", "roundRobin",
                 "routerType: roundRobin, random, broadcast, smallestMailbox, consistentHash, scatterGather, "
                 "tailChopping or a custom router .so")
             .option("hot-deployment", "true", "hotDeployment: true or false")
             .option("args", "", "args given to the workers, as JSON")
             .option("delivery-mode", "",
                     "deliveryMode: at-least-once or at-most-once (the node's default if unset)")
             .option("credits", "", "credits: messages a worker may hold (the node's default if unset)")
             .option("sha256", "", "the plugin's SHA-256 (hex): a plugin file with another hash is refused");
       },
       [](auto& a, auto& c, auto& in) {
         bool any_flag = false;
         for (auto& f : deploy_flags) any_flag = any_flag || c.is_set(f);
         if (!a.empty() && any_flag) throw usage_error("give a FILE.json or options, not both");
         return a.empty() ? deploy_from_flags(c) : deploy_from_file(a[0], in);
       }},
      {"shutdown", "ID SYSTEM [ISOLATE]",
       "Stops pool ISOLATE of isolate system SYSTEM on node ID, or the whole isolate system without\n"
       "ISOLATE: POST /registry/system/shutdown.",
       2, 3, [](cli&) {},
       [](auto& a, auto&, auto&) {
         json body = {{"bootstrapperId", a[0]}, {"isolateSystemName", a[1]}};
         if (a.size() == 3) body["isolateName"] = a[2];
         return rest_call{"POST", "/registry/system/shutdown", body.dump(2)};
       }},
      {"restart", "ID SYSTEM ISOLATE",
       "Restarts every worker of pool SYSTEM/ISOLATE on node ID once its in-flight messages are done\n"
       "(thesis RESTART): POST /registry/system/restart.",
       3, 3, [](cli&) {},
       [](auto& a, auto&, auto&) {
         json body = {{"bootstrapperId", a[0]}, {"isolateSystemName", a[1]}, {"isolateName", a[2]}};
         return rest_call{"POST", "/registry/system/restart", body.dump(2)};
       }},
      {"kill", "ID SYSTEM ISOLATE [WORKER]",
       "Kills worker WORKER of pool SYSTEM/ISOLATE on node ID, or every worker without WORKER (thesis\n"
       "KILL): each finishes the messages it holds and stays down until a restart: POST "
       "/registry/system/kill.",
       3, 4, [](cli&) {},
       [](auto& a, auto&, auto&) {
         json body = {{"bootstrapperId", a[0]}, {"isolateSystemName", a[1]}, {"isolateName", a[2]}};
         if (a.size() == 4) body["workerId"] = a[3];
         return rest_call{"POST", "/registry/system/kill", body.dump(2)};
       }},
      {"migrate", "ID SYSTEM ISOLATE (--workers LIST | --to ID2)",
       "Moves pool SYSTEM/ISOLATE of node ID to new workersPaths on that node (--workers), or to node ID2\n"
       "(--to; with --workers too, it runs there with those paths): POST /registry/migrate.",
       3, 3,
       [](cli& c) {
         c.option("workers", "", "comma-separated new workersPaths")
             .option("to", "", "bootstrapperId of the target node");
       },
       [](auto& a, auto& c, auto&) {
         json body = {{"bootstrapperId", a[0]}, {"isolateSystemName", a[1]}, {"isolateName", a[2]}};
         if (c.get("workers").empty() && c.get("to").empty())
           throw usage_error("migrate needs --workers or --to");
         if (!c.get("workers").empty()) body["workersPaths"] = split_list(c.get("workers"));
         if (!c.get("to").empty()) body["toBootstrapperId"] = c.get("to");
         return rest_call{"POST", "/registry/migrate", body.dump(2)};
       }},
      {"status", "",
       "Every pool of the cluster in one table: node, system, state, workers, messages in and out per\n"
       "second, in flight, queue and dead-letter depth: GET /registry/status.",
       0, 0, [](cli&) {},
       [](auto&, auto&, auto&) {
         return rest_call{"GET", "/registry/status", ""};
       }},
      {"apply", "-f FILE",
       "Makes the cluster run the pools of FILE (a JSON array of deploy bodies; '-' = standard input):\n"
       "deploys what is missing, changes what differs (a new rate at once; other fields by redeploying\n"
       "the pool; another node by moving it), leaves what matches. Fields a body leaves out keep their\n"
       "running values; applying twice changes nothing: POST /registry/apply.",
       0, 1,
       [](cli& c) {
         c.option("filename", "", "-f: the JSON file of deploy bodies ('-' = standard input)", "FILE")
             .flag("dry-run", "only say what would change");
       },
       apply_from},
      {"health", "", "Checks the registry: GET /registry/health.", 0, 0, [](cli&) {},
       [](auto&, auto&, auto&) {
         return rest_call{"GET", "/registry/health", ""};
       }},
      {"dlq", "(list | show | replay | purge) SYSTEM/POOL [ID...]",
       "The dead letters of pool SYSTEM/POOL (queue dde.dead.SYSTEM.POOL): list them (why each was\n"
       "dead-lettered, attempts, the plugin md5 that failed it, age, size), show one ID, replay IDs (or\n"
       "--all) to the pool, e.g. once a fixed version is deployed, or purge IDs (or --all): GET\n"
       "/registry/dlq/SYSTEM/POOL[/ID], POST /registry/dlq/SYSTEM/POOL/replay, POST .../purge.",
       2, 10000,
       [](cli& c) {
         c.option("limit", "", "list: show at most this many (default 100, at most 1000); replay: move at most this many")
             .flag("all", "replay or purge: every message (instead of IDs)");
       },
       dlq_from},
      {"ask", "ADDRESS [JSON]",
       "Sends JSON (default {}; '-' = standard input) to pool ADDRESS (system/isolate) as an ask, through\n"
       "its MQS (not the registry), and prints the reply (exit 1 when none comes in time). The registry\n"
       "is asked first where the pool runs: a pool no node runs is an error, and nothing is sent.",
       1, 2,
       [](cli& c) {
         c.option("mqs", "", "the dde-mqs to send through (default: the pool's, as the registry knows it)")
             .option("mode", "",
                     "at-least-once or at-most-once (default: the pool's; with --no-registry: at-least-once)")
             .flag("no-registry",
                   "send without asking the registry (the MQS declares the queue if it is new; --mqs default "
                   "ws://127.0.0.1:42043/mqs)");
       },
       ask_from},
  };
  return all;
}

cli command_cli(const command& cmd) {
  cli c(std::string("ddectl ") + cmd.name + (*cmd.synopsis ? std::string(" ") + cmd.synopsis : ""),
        cmd.summary);
  cmd.options(c);
  common_options(c);
  return c;
}

/// Parses `options` (positionals removed) with `c`; throws usage_error.
void parse_options(cli& c, const std::vector<std::string>& options) {
  std::vector<std::string> storage = {"ddectl"};
  storage.insert(storage.end(), options.begin(), options.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  if (auto err = c.parse(int(argv.size()), argv.data())) throw usage_error(*err);
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
  // Every option takes a value except --help, --version and the flags, so positionals are what no
  // option consumes.
  static const std::set<std::string> flags = {"--help", "-h", "--version", "--no-registry", "--dry-run", "--all"};
  static const std::map<std::string, std::string> short_options = {{"-o", "--output"}, {"-f", "--filename"}};
  std::vector<std::string> options, positionals;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto a = args[i];
    if (auto s = short_options.find(a); s != short_options.end()) a = s->second;
    bool is_option = a.size() > 2 && a.compare(0, 2, "--") == 0;
    if (flags.count(a) || (is_option && a.find('=') != std::string::npos)) {
      options.push_back(a);
    } else if (is_option) {
      options.push_back(a);
      if (i + 1 < args.size()) options.push_back(args[++i]);
    } else {
      positionals.push_back(a);
    }
  }
  try {
    if (positionals.empty()) {
      cli c("ddectl", "");
      common_options(c);
      parse_options(c, options);
      if (c.help_requested()) {
        out.help = general_help();
        return out;
      }
      if (c.version_requested()) {
        out.help = c.version_line() + "\n";
        return out;
      }
      throw usage_error(
          "missing command (list, show, status, deploy, apply, shutdown, restart, kill, migrate, health, dlq, ask)");
    }
    const command* cmd = nullptr;
    for (auto& candidate : commands())
      if (positionals[0] == candidate.name) cmd = &candidate;
    if (!cmd) throw usage_error("unknown command \"" + positionals[0] + "\" (see ddectl --help)");
    positionals.erase(positionals.begin());
    auto c = command_cli(*cmd);
    parse_options(c, options);
    if (c.help_requested()) {
      out.help = c.usage();
      return out;
    }
    if (positionals.size() < cmd->min_args || positionals.size() > cmd->max_args)
      throw usage_error(std::string("usage: ddectl ") + cmd->name +
                        (*cmd->synopsis ? std::string(" ") + cmd->synopsis : "") + " (see ddectl " +
                        cmd->name + " --help)");
    out.command = cmd->name;
    out.args = positionals;
    if (c.get("output") != "table" && c.get("output") != "json")
      throw usage_error("-o/--output must be table or json, got \"" + c.get("output") + "\"");
    out.output = c.get("output") == "json" ? output_format::json : output_format::table;
    out.registry = c.get("registry");
    while (!out.registry.empty() && out.registry.back() == '/') out.registry.pop_back();
    if (out.registry.rfind("http://", 0) != 0 && out.registry.rfind("https://", 0) != 0)
      throw usage_error("--registry must be an http:// or https:// URL, got \"" + c.get("registry") + "\"");
    out.tls.ca_file = c.get("tls-ca").empty() ? c.get("ca") : c.get("tls-ca");
    out.tls.cert_file = c.get("tls-cert");
    out.tls.key_file = c.get("tls-key");
    if (out.tls.cert_file.empty() != out.tls.key_file.empty())
      throw usage_error("--tls-cert and --tls-key go together");
    try {
      out.timeout = std::chrono::milliseconds(c.get_int("timeout-ms", 1, 3600 * 1000));
      // An apply runs its pools' deploys one after another, each up to the node's request timeout.
      if (out.command == "apply" && !c.is_set("timeout-ms")) out.timeout = std::chrono::milliseconds(300000);
    } catch (const std::invalid_argument& e) {
      throw usage_error(e.what());
    }
    try {
      out.token = net::load_secret(c.get("token-file"), "DDE_TOKEN");
      out.cluster_secret = net::load_secret(c.get("cluster-secret-file"), net::cluster_secret_env);
    } catch (const std::invalid_argument& e) {
      throw usage_error(e.what());
    }
    auto built = cmd->build(positionals, c, stdin_for_dash);
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
